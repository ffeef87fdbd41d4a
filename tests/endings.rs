//! How loops end and what stops them, across the real binaries: prompts
//! that are not the user's, budgets (tokens, time, estimated cost), no
//! progress, the block cap seen in the transcript, API failures and usage
//! limits (StopFailure), notifications (terminal sequence and webhook),
//! and the `--rewake` registration that wakes the session instead of
//! blocking its end.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "3f1c2b7e-91d4-4c55-8a0e-6b2d9e4f7a10";

/// Sources of prompts no person typed (Claude Code 2.1.3xx).
const NOT_THE_USER: [&str; 5] = [
    "sdk",
    "system",
    "loop_wakeup",
    "schedule_wakeup",
    "poll_event",
];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_env(
    binary: &str,
    project: &Path,
    args: &[&str],
    stdin: &Value,
    env: &[(&str, &str)],
) -> Run {
    let mut command = util::command(binary, project);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = util::run_with_stdin(command, stdin.to_string().as_bytes());
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn cli(project: &Path, args: &[&str]) -> Run {
    let mut command = util::command("ralph-hooks", project);
    command.env("CLAUDE_CODE_SESSION_ID", SESSION).args(args);
    let output = util::run_with_stdin(command, b"");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn cli_ok(project: &Path, args: &[&str]) -> String {
    let run = cli(project, args);
    assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    run.stdout
}

/// A UserPromptSubmit; `source` is left out when `None`.
fn prompt(project: &Path, text: &str, source: Option<&str>, transcript: Option<&Path>) -> Value {
    let mut input = json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                           "cwd": project, "prompt": text});
    if let Some(source) = source {
        input["source"] = json!(source);
    }
    if let Some(path) = transcript {
        input["transcript_path"] = json!(path);
    }
    let run = run_env("ralph-user-prompt-submit", project, &[], &input, &[]);
    assert_eq!(run.code, 0, "prompt hook failed: {}", run.stderr);
    parse(&run.stdout)
}

fn stop_input(project: &Path, active: bool, transcript: Option<&Path>, last: &str) -> Value {
    let mut input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                           "stop_hook_active": active, "last_assistant_message": last,
                           "background_tasks": []});
    if let Some(path) = transcript {
        input["transcript_path"] = json!(path);
    }
    input
}

/// The plain Stop registration: exit 0 always; its JSON (or null).
fn stop(project: &Path, active: bool, transcript: Option<&Path>) -> Value {
    stop_env(project, active, transcript, &[])
}

fn stop_env(
    project: &Path,
    active: bool,
    transcript: Option<&Path>,
    env: &[(&str, &str)],
) -> Value {
    edit(project);
    let input = stop_input(project, active, transcript, "working on it");
    let run = run_env("ralph-stop-loop-controller", project, &[], &input, env);
    assert_eq!(run.code, 0, "stop hook failed: {}", run.stderr);
    parse(&run.stdout)
}

/// The `--rewake` (asyncRewake) registration.
fn rewake_stop(project: &Path, active: bool, last: &str) -> Run {
    edit(project);
    let input = stop_input(project, active, None, last);
    run_env(
        "ralph-stop-loop-controller",
        project,
        &["--rewake"],
        &input,
        &[],
    )
}

fn stop_failure(project: &Path, error: &str, text: &str, transcript: Option<&Path>) -> Run {
    let mut input = json!({"hook_event_name": "StopFailure", "session_id": SESSION, "cwd": project,
                           "error": error, "last_assistant_message": text});
    if let Some(path) = transcript {
        input["transcript_path"] = json!(path);
    }
    run_env("ralph-stop-loop-controller", project, &[], &input, &[])
}

fn session_start(project: &Path, transcript: Option<&Path>) -> Value {
    let mut input = json!({"hook_event_name": "SessionStart", "session_id": SESSION,
                           "cwd": project, "source": "resume"});
    if let Some(path) = transcript {
        input["transcript_path"] = json!(path);
    }
    let run = run_env("ralph-session-start", project, &[], &input, &[]);
    assert_eq!(run.code, 0, "session start failed: {}", run.stderr);
    parse(&run.stdout)
}

fn statusline(project: &Path) -> String {
    let input = json!({"session_id": SESSION, "cwd": project, "model": {"id": "x", "display_name": "X"},
                       "workspace": {"current_dir": project, "project_dir": project}});
    let run = run_env("ralph-hooks", project, &["statusline"], &input, &[]);
    assert_eq!(run.code, 0, "statusline failed: {}", run.stderr);
    run.stdout
}

fn parse(stdout: &str) -> Value {
    if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
    }
}

fn loop_state(project: &Path) -> Value {
    let path = project.join(".claude/orchestrator/loop.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn events(project: &Path) -> String {
    std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl")).unwrap_or_default()
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_string()
}

fn start(project: &Path, extra: &[&str]) {
    git_init(project);
    let mut args = vec![
        "loop",
        "start",
        "ship it",
        "--promise",
        "DONE",
        "--no-diagnostics",
    ];
    args.extend_from_slice(extra);
    cli_ok(project, &args);
}

fn git_init(project: &Path) {
    if project.join(".git").exists() {
        return;
    }
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(project)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A real edit between two stops, so the loop never looks stagnant
/// (identical evidence): what the tests are about is something else.
fn edit(project: &Path) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::fs::write(project.join("work.txt"), format!("edit {n}\n")).unwrap();
}

/// A transcript the test appends Claude Code's rows to.
struct Transcript {
    path: PathBuf,
    messages: u32,
}

impl Transcript {
    fn new(project: &Path) -> Transcript {
        let path = project.join("transcript.jsonl");
        std::fs::write(&path, "").unwrap();
        Transcript { path, messages: 0 }
    }

    fn append(&self, row: Value) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .unwrap();
        writeln!(file, "{row}").unwrap();
    }

    /// An assistant message with this usage, stamped now.
    fn assistant(&mut self, model: &str, input: u64, output: u64) {
        self.messages += 1;
        self.append(json!({
            "type": "assistant", "sessionId": SESSION, "timestamp": now(),
            "message": {"id": format!("msg_{}", self.messages), "role": "assistant", "model": model,
                        "content": [{"type": "text", "text": "working"}],
                        "usage": {"input_tokens": input, "output_tokens": output,
                                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        }));
    }

    /// The row Claude Code writes when its block cap ends a turn.
    fn cap_row(&self) {
        self.append(json!({
            "type": "system", "subtype": "informational", "level": "warning", "sessionId": SESSION,
            "timestamp": now(),
            "content": "A hook blocked the turn from ending 9 consecutive times—overriding and ending turn. Check your Stop hooks."
        }));
    }

    /// The failed turn's row of a subscription limit.
    fn limit_row(&self, resets_at: i64) {
        self.append(json!({
            "type": "assistant", "sessionId": SESSION, "timestamp": now(), "isApiErrorMessage": true,
            "apiErrorStatus": 429, "error": "rate_limit",
            "quotaLimits": {"status": "rejected", "resetsAt": resets_at, "rateLimitType": "five_hour"},
            "message": {"id": "err_1", "role": "assistant", "model": "<synthetic>",
                        "content": [{"type": "text", "text": "You've hit your 5-hour limit · resets 3am (UTC)"}],
                        "usage": {"input_tokens": 0, "output_tokens": 0}}
        }));
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// ---------------------------------------------------------------------------
// Prompts that are not the user's.

#[test]
fn only_the_users_prompts_stop_the_loop_or_reset_its_block_count() {
    let temp = TempDir::new("endings-sources");
    let project = temp.path();
    start(project, &[]);
    assert_eq!(stop(project, false, None)["decision"], "block");
    assert_eq!(stop(project, true, None)["decision"], "block");
    assert_eq!(loop_state(project)["consecutive_blocks"], 2);

    for source in NOT_THE_USER {
        assert_eq!(
            prompt(project, "stop", Some(source), None),
            Value::Null,
            "{source}"
        );
        assert_eq!(
            prompt(project, "keep going", Some(source), None),
            Value::Null,
            "{source}"
        );
        let state = loop_state(project);
        assert_eq!(
            state["status"], "RUNNING",
            "a {source} prompt paused the loop"
        );
        assert_eq!(
            state["consecutive_blocks"], 2,
            "a {source} prompt reset the count"
        );
    }
    // A woken turn's task notification carries no source in 2.1.330.
    let woken =
        "<task-notification>\n<summary>Stop hook feedback</summary>\nstop\n</task-notification>";
    assert_eq!(prompt(project, woken, None, None), Value::Null);
    assert_eq!(loop_state(project)["status"], "RUNNING");
    assert_eq!(loop_state(project)["consecutive_blocks"], 2);

    // The user's own prompt, with or without a source, does reset and stop.
    assert_eq!(
        prompt(project, "keep going", Some("user"), None),
        Value::Null
    );
    assert_eq!(loop_state(project)["consecutive_blocks"], 0);
    stop(project, false, None);
    assert_eq!(
        loop_state(project)["consecutive_blocks"],
        1,
        "a fresh turn's first block"
    );
    stop(project, true, None);
    assert_eq!(prompt(project, "keep going", None, None), Value::Null);
    assert_eq!(loop_state(project)["consecutive_blocks"], 0);
    let said = prompt(project, "stop", Some("user"), None);
    assert!(
        text(&said, "systemMessage").contains("paused at iteration"),
        "{said}"
    );
    assert_eq!(loop_state(project)["status"], "PAUSED");
}

#[test]
fn a_missing_source_is_the_user() {
    let temp = TempDir::new("endings-nosource");
    let project = temp.path();
    start(project, &[]);
    let said = prompt(project, "stop", None, None);
    assert!(
        text(&said, "systemMessage").contains("paused at iteration"),
        "{said}"
    );
    assert_eq!(loop_state(project)["status"], "PAUSED");
}

#[test]
fn a_system_prompt_does_not_lift_the_users_stop() {
    let temp = TempDir::new("endings-steps");
    let project = temp.path();
    cli_ok(project, &["task", "start", "add OAuth login"]);
    cli_ok(project, &["task", "steps", "set", "read", "write", "test"]);
    let steps = stop(project, false, None);
    assert!(
        text(&steps, "reason").contains("[SELF-DRIVING 1/20]"),
        "{steps}"
    );
    prompt(project, "stop", Some("user"), None);
    assert_eq!(stop(project, false, None), Value::Null);
    for source in NOT_THE_USER {
        prompt(project, "Background task finished", Some(source), None);
        assert_eq!(
            stop(project, false, None),
            Value::Null,
            "a {source} prompt lifted the user's stop"
        );
    }
    prompt(
        project,
        "<task-notification>Stop hook feedback</task-notification>",
        None,
        None,
    );
    assert_eq!(stop(project, false, None), Value::Null);
    // The user's next ordinary prompt lifts it.
    prompt(project, "ok, carry on", Some("user"), None);
    let steps = stop(project, false, None);
    assert!(text(&steps, "reason").contains("[SELF-DRIVING"), "{steps}");
}

// ---------------------------------------------------------------------------
// Budgets.

#[test]
fn a_token_budget_is_shown_warned_at_80_percent_and_ends_the_loop() {
    let temp = TempDir::new("endings-tokens");
    let project = temp.path();
    start(project, &["--max-tokens", "10k"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 3000, 2000);

    let first = stop(project, false, Some(transcript.path()));
    assert_eq!(first["decision"], "block", "{first}");
    let reason = text(&first, "reason");
    assert!(
        reason.contains("token budget: 5,000 of 10,000 used (5,000 left, 50 %)"),
        "{reason}"
    );
    let state = loop_state(project);
    assert_eq!(state["history"][0]["tokens"]["input"], 3000);
    assert_eq!(state["history"][0]["tokens"]["output"], 2000);
    assert!(state["history"][0]["duration_secs"].is_u64(), "{state}");
    assert_eq!(state["spend"]["tokens"]["output"], 2000);

    // The same message counted again must not count twice.
    let again = stop(project, true, Some(transcript.path()));
    assert!(
        text(&again, "reason").contains("5,000 of 10,000"),
        "{again}"
    );

    transcript.assistant("claude-sonnet-4-5", 3000, 500);
    let warned = stop(project, true, Some(transcript.path()));
    assert!(
        text(&warned, "reason").contains("WARNING: 85 % of the token budget"),
        "{warned}"
    );
    assert!(
        text(&warned, "systemMessage").contains("Budget warning"),
        "{warned}"
    );
    assert!(events(project).contains("loop_budget_warning"));
    let status = cli_ok(project, &["loop", "status"]);
    assert!(status.contains("8,500"), "{status}");
    let overview: Value = serde_json::from_str(&cli_ok(project, &["status", "--json"])).unwrap();
    assert_eq!(overview["spend"]["totalTokens"], 8500, "{overview}");
    let line = statusline(project);
    assert!(line.contains("8k/10k tok"), "{line}");

    // The warning is given once.
    transcript.assistant("claude-sonnet-4-5", 100, 100);
    let quiet = stop(project, true, Some(transcript.path()));
    assert!(
        !text(&quiet, "systemMessage").contains("Budget warning"),
        "{quiet}"
    );

    transcript.assistant("claude-sonnet-4-5", 1000, 500);
    let ended = stop(project, true, Some(transcript.path()));
    assert_ne!(ended["decision"], "block", "{ended}");
    let message = text(&ended, "systemMessage");
    assert!(message.contains("FAILED: budget"), "{message}");
    assert!(
        message.contains("token budget is exhausted: 10,200 used of 10,000"),
        "{message}"
    );
    assert!(message.contains("Still to do"), "{message}");
    let archived = loop_state(project);
    assert_eq!(archived["status"], "FAILED");
    assert_eq!(archived["completion_reason"], "budget");
    assert!(
        text(&archived, "completion_detail").contains("token"),
        "{archived}"
    );
}

#[test]
fn a_time_budget_counts_the_loops_active_time() {
    let temp = TempDir::new("endings-time");
    let project = temp.path();
    start(project, &["--max-time", "1h"]);
    let started: DateTime<Utc> = text(&loop_state(project), "started_at").parse().unwrap();
    let at = |minutes: i64| (started + chrono::Duration::minutes(minutes)).to_rfc3339();
    let early = stop_env(project, false, None, &[("RALPH_HOOKS_NOW", &at(10))]);
    assert!(
        text(&early, "reason").contains("time budget: 10m"),
        "{early}"
    );
    let late = stop_env(project, true, None, &[("RALPH_HOOKS_NOW", &at(61))]);
    let message = text(&late, "systemMessage");
    assert!(message.contains("FAILED: budget"), "{late}");
    assert!(message.contains("time budget is exhausted"), "{message}");
    assert_eq!(loop_state(project)["completion_reason"], "budget");
}

#[test]
fn the_cost_budget_is_an_estimate_from_a_configurable_price_table() {
    let temp = TempDir::new("endings-cost");
    let project = temp.path();
    // 20,000 input tokens of Sonnet at the built-in $3/M: $0.06.
    start(project, &["--max-cost", "0.05"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 20_000, 0);
    let ended = stop(project, false, Some(transcript.path()));
    let message = text(&ended, "systemMessage");
    assert!(
        message.contains("cost budget (estimated) is exhausted: $0.06 used of $0.05"),
        "{message}"
    );

    // At $1/M from the config the same turn costs $0.02 and goes on.
    let temp = TempDir::new("endings-cost-config");
    let project = temp.path();
    util::write_hook_config(
        project,
        json!({"budget": {"prices": {"sonnet": {"input": 1.0, "output": 5.0}}}}),
    );
    start(project, &["--max-cost", "$0.05"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 20_000, 0);
    let going = stop(project, false, Some(transcript.path()));
    assert_eq!(going["decision"], "block", "{going}");
    assert!(
        text(&going, "reason").contains("cost budget (estimated): $0.02 of $0.05"),
        "{going}"
    );
}

#[test]
fn a_bad_budget_is_refused_at_start() {
    let temp = TempDir::new("endings-bad-budget");
    let project = temp.path();
    for args in [
        &["--max-tokens", "0"][..],
        &["--max-tokens", "lots"],
        &["--max-time", "soon"],
        &["--max-cost", "free"],
        &["--max-cost", "0"],
    ] {
        let mut all = vec!["loop", "start", "x", "--promise", "DONE"];
        all.extend_from_slice(args);
        let run = cli(project, &all);
        assert_ne!(run.code, 0, "{args:?} was accepted");
        assert!(!run.stderr.is_empty());
    }
    assert!(!project.join(".claude/orchestrator/loop.json").exists());
}

// ---------------------------------------------------------------------------
// Diminishing returns.

/// A check whose output differs at every run (so the evidence is never
/// identical and stagnation never fires) and which always fails.
const RESTLESS_CHECK: &str = "date +%s%N; exit 1";

#[test]
fn stop_when_stuck_ends_a_loop_that_spends_without_fixing() {
    let temp = TempDir::new("endings-stuck");
    let project = temp.path();
    git_init(project);
    cli_ok(
        project,
        &[
            "loop",
            "start",
            "fix it",
            "--check",
            RESTLESS_CHECK,
            "--no-diagnostics",
            "--stop-when-stuck",
        ],
    );
    let mut transcript = Transcript::new(project);
    let mut last = Value::Null;
    for turn in 0..3 {
        transcript.assistant("claude-sonnet-4-5", 1000, 200);
        last = stop(project, turn > 0, Some(transcript.path()));
        if turn < 2 {
            assert_eq!(last["decision"], "block", "turn {turn}: {last}");
        }
    }
    let message = text(&last, "systemMessage");
    assert!(message.contains("FAILED: no progress"), "{last}");
    assert!(
        message.contains("3 iterations in a row fixed no problem"),
        "{message}"
    );
    assert!(message.contains("3,600 tokens"), "{message}");
    assert_eq!(loop_state(project)["completion_reason"], "no_progress");

    // Without the flag the same run goes on.
    let temp = TempDir::new("endings-not-stuck");
    let project = temp.path();
    git_init(project);
    cli_ok(
        project,
        &[
            "loop",
            "start",
            "fix it",
            "--check",
            RESTLESS_CHECK,
            "--no-diagnostics",
        ],
    );
    let mut transcript = Transcript::new(project);
    for turn in 0..4 {
        transcript.assistant("claude-sonnet-4-5", 1000, 200);
        assert_eq!(
            stop(project, turn > 0, Some(transcript.path()))["decision"],
            "block"
        );
    }
}

// ---------------------------------------------------------------------------
// The block cap, seen.

fn capped_loop(label: &str) -> (TempDir, Transcript) {
    let temp = TempDir::new(label);
    let project = temp.path();
    start(project, &[]);
    let transcript = Transcript::new(project);
    stop(project, false, Some(transcript.path()));
    stop(project, true, Some(transcript.path()));
    assert_eq!(loop_state(project)["consecutive_blocks"], 2);
    std::thread::sleep(Duration::from_millis(5));
    transcript.cap_row();
    (temp, transcript)
}

#[test]
fn a_capped_turn_is_recorded_at_the_next_stop_and_is_no_completion() {
    let (temp, transcript) = capped_loop("endings-cap-stop");
    let project = temp.path();
    let next = stop(project, false, Some(transcript.path()));
    assert_eq!(next["decision"], "block", "the loop carries on: {next}");
    let message = text(&next, "systemMessage");
    assert!(message.contains("block cap stopped it"), "{message}");
    assert!(
        message.contains("not because the loop finished"),
        "{message}"
    );
    let state = loop_state(project);
    assert_eq!(state["status"], "RUNNING");
    assert_eq!(state["capped"], 1);
    assert!(state["capped_at"].is_string());
    assert!(
        state["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["capped_at"].is_string()),
        "{state}"
    );
    assert!(events(project).contains("loop_capped"));
    // Told once.
    let after = stop(project, true, Some(transcript.path()));
    assert!(
        !text(&after, "systemMessage").contains("block cap stopped it"),
        "{after}"
    );
    assert_eq!(loop_state(project)["capped"], 1);
}

#[test]
fn a_capped_turn_is_recorded_at_the_next_prompt_or_session_start() {
    let (temp, transcript) = capped_loop("endings-cap-prompt");
    let project = temp.path();
    let said = prompt(project, "continue", None, Some(transcript.path()));
    assert!(
        text(&said, "systemMessage").contains("block cap stopped it"),
        "{said}"
    );
    assert_eq!(loop_state(project)["capped"], 1);
    assert_eq!(loop_state(project)["consecutive_blocks"], 0);
    assert_eq!(
        prompt(project, "more", None, Some(transcript.path())),
        Value::Null
    );
    assert_eq!(loop_state(project)["capped"], 1, "told and counted once");

    let (temp, transcript) = capped_loop("endings-cap-session");
    let project = temp.path();
    let started = session_start(project, Some(transcript.path()));
    assert!(
        text(&started, "systemMessage").contains("block cap stopped it"),
        "{started}"
    );
    assert_eq!(loop_state(project)["capped"], 1);
    assert_eq!(loop_state(project)["status"], "RUNNING");
    let again = session_start(project, Some(transcript.path()));
    assert!(
        !text(&again, "systemMessage").contains("block cap"),
        "{again}"
    );
}

#[test]
fn a_prompt_that_is_not_the_users_leaves_a_capped_turn_for_later() {
    let (temp, transcript) = capped_loop("endings-cap-system");
    let project = temp.path();
    assert_eq!(
        prompt(project, "tick", Some("system"), Some(transcript.path())),
        Value::Null
    );
    assert!(loop_state(project).get("capped").is_none_or(|c| c == 0));
}

// ---------------------------------------------------------------------------
// API failures and usage limits.

#[test]
fn a_usage_limit_pauses_the_loop_without_spending_an_iteration() {
    let temp = TempDir::new("endings-limit");
    let project = temp.path();
    start(project, &[]);
    let transcript = Transcript::new(project);
    stop(project, false, None);
    assert_eq!(loop_state(project)["iteration"], 1);
    let resets = Utc::now().timestamp() + 3 * 3600;
    transcript.limit_row(resets);
    let failed = stop_failure(
        project,
        "rate_limit",
        "You've hit your 5-hour limit · resets 3am (UTC)",
        Some(transcript.path()),
    );
    assert_eq!(failed.code, 0, "{}", failed.stderr);
    assert_eq!(failed.stdout, "");
    let state = loop_state(project);
    assert_eq!(state["status"], "PAUSED");
    assert_eq!(state["paused_by"], "usage_limit");
    assert_eq!(state["iteration"], 1, "no iteration spent");
    let at: DateTime<Utc> = text(&state, "resets_at").parse().unwrap();
    assert_eq!(
        at.timestamp(),
        resets,
        "the transcript's quotaLimits.resetsAt wins"
    );
    let logged = events(project);
    assert!(logged.contains("\"by\":\"usage_limit\""), "{logged}");

    // A paused loop lets the session stop; the session start says why.
    assert_eq!(stop(project, false, None), Value::Null);
    let context = session_start(project, None);
    let said = format!("{context}");
    assert!(said.contains("A usage limit paused it"), "{said}");
    assert!(
        text(&context, "systemMessage").contains("paused at"),
        "told once, here: {said}"
    );
    // A prompt that is not the user's does not resume it.
    prompt(project, "Background task finished", Some("system"), None);
    assert_eq!(loop_state(project)["status"], "PAUSED");
    // The user's next prompt does, and hears what happened.
    let resumed = prompt(project, "continue", None, None);
    let message = text(&resumed, "systemMessage");
    assert!(
        !message.contains("paused at"),
        "the notice was given at the session start: {resumed}"
    );
    assert!(message.contains("resumed at iteration 1/"), "{resumed}");
    assert_eq!(loop_state(project)["status"], "RUNNING");
    assert_eq!(stop(project, false, None)["decision"], "block");
    assert_eq!(loop_state(project)["iteration"], 2);
}

#[test]
fn the_reset_time_is_read_from_the_notice_when_the_transcript_has_none() {
    let temp = TempDir::new("endings-limit-text");
    let project = temp.path();
    start(project, &[]);
    let failed = stop_failure(
        project,
        "rate_limit",
        "You've hit your limit · resets 3am (UTC)",
        None,
    );
    assert_eq!(failed.code, 0, "{}", failed.stderr);
    let at: DateTime<Utc> = text(&loop_state(project), "resets_at").parse().unwrap();
    assert_eq!(at.format("%H:%M").to_string(), "03:00");
    // `loop resume` resumes it too.
    let out = cli_ok(project, &["loop", "resume"]);
    assert!(out.contains("iteration 0/"), "{out}");
    assert_eq!(loop_state(project)["status"], "RUNNING");
}

#[test]
fn a_server_error_is_recorded_and_the_loop_keeps_running() {
    let temp = TempDir::new("endings-overloaded");
    let project = temp.path();
    start(project, &[]);
    stop(project, false, None);
    let failed = stop_failure(project, "server_error", "API Error: 529 Overloaded.", None);
    assert_eq!(failed.code, 0, "{}", failed.stderr);
    let state = loop_state(project);
    assert_eq!(state["status"], "RUNNING");
    assert_eq!(state["iteration"], 1);
    assert_eq!(state["api_failures"][0]["error"], "server_error");
    assert!(events(project).contains("loop_api_failure"));
    let said = prompt(project, "continue", None, None);
    assert!(text(&said, "systemMessage").contains("API error"), "{said}");
    // Told once.
    assert_eq!(prompt(project, "and?", None, None), Value::Null);
}

#[test]
fn a_stop_carrying_a_limit_notice_spends_no_iteration() {
    let temp = TempDir::new("endings-limit-stop");
    let project = temp.path();
    start(project, &[]);
    let input = stop_input(
        project,
        false,
        None,
        "You've hit your limit · resets 3pm (UTC)",
    );
    let run = run_env("ralph-stop-loop-controller", project, &[], &input, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let state = loop_state(project);
    assert_eq!(state["iteration"], 0);
    assert_eq!(state["paused_by"], "usage_limit");
}

#[test]
fn stop_failure_without_a_loop_or_with_bad_input_never_blocks() {
    let temp = TempDir::new("endings-limit-none");
    let project = temp.path();
    let run = stop_failure(project, "rate_limit", "You've hit your limit", None);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    for args in [&[][..], &["--rewake"]] {
        let mut command = util::command("ralph-stop-loop-controller", project);
        command.args(args);
        let output = util::run_with_stdin(command, b"{not json");
        assert_eq!(output.status.code(), Some(1), "{args:?}");
    }
}

#[test]
fn auto_resume_waits_for_the_reset_and_wakes_the_session() {
    let temp = TempDir::new("endings-auto-resume");
    let project = temp.path();
    util::write_hook_config(
        project,
        json!({"loop": {"auto_resume": true, "auto_resume_margin_secs": 0}}),
    );
    start(project, &[]);
    let transcript = Transcript::new(project);
    transcript.limit_row(Utc::now().timestamp() + 2);
    let input = json!({"hook_event_name": "StopFailure", "session_id": SESSION, "cwd": project,
                       "error": "rate_limit", "transcript_path": transcript.path(),
                       "last_assistant_message": "You've hit your 5-hour limit · resets 3am (UTC)"});
    // Claude Code starts both registrations at once.
    let waiting = {
        let project = project.to_path_buf();
        let input = input.clone();
        std::thread::spawn(move || {
            run_env(
                "ralph-stop-loop-controller",
                &project,
                &["--rewake"],
                &input,
                &[],
            )
        })
    };
    let recorded = run_env("ralph-stop-loop-controller", project, &[], &input, &[]);
    assert_eq!(
        (recorded.code, recorded.stdout.as_str()),
        (0, ""),
        "{}",
        recorded.stderr
    );
    assert_eq!(loop_state(project)["status"], "PAUSED");
    let woke = waiting.join().unwrap();
    assert_eq!(woke.code, 2, "the wake signal: {}", woke.stderr);
    assert_eq!(woke.stdout, "");
    assert!(
        woke.stderr.contains("The usage limit has reset"),
        "{}",
        woke.stderr
    );
    assert!(
        woke.stderr.contains("RUNNING again at iteration 0/10"),
        "{}",
        woke.stderr
    );
    assert_eq!(loop_state(project)["status"], "RUNNING");
    assert!(events(project).contains("\"by\":\"auto_resume\""));
}

#[test]
fn without_auto_resume_the_rewake_stop_failure_hook_does_nothing() {
    let temp = TempDir::new("endings-no-auto-resume");
    let project = temp.path();
    start(project, &[]);
    let transcript = Transcript::new(project);
    transcript.limit_row(Utc::now().timestamp() + 2);
    let input = json!({"hook_event_name": "StopFailure", "session_id": SESSION, "cwd": project,
                       "error": "rate_limit", "transcript_path": transcript.path(),
                       "last_assistant_message": "You've hit your limit"});
    let run = run_env(
        "ralph-stop-loop-controller",
        project,
        &["--rewake"],
        &input,
        &[],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    // Recording is the ordinary registration's: this one left the loop alone.
    assert_eq!(loop_state(project)["status"], "RUNNING");
}

#[test]
fn install_registers_stop_failure_and_auto_resume_when_asked() {
    let temp = TempDir::new("endings-install");
    let project = temp.path();
    let handlers = |project: &Path| -> Vec<Value> {
        let settings: Value = serde_json::from_str(
            &std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        )
        .unwrap();
        settings["hooks"]["StopFailure"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|group| group["hooks"].as_array().unwrap().clone())
            .collect()
    };
    cli_ok(project, &["install"]);
    let plain = handlers(project);
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert!(
        text(&plain[0], "command").ends_with("ralph-stop-loop-controller"),
        "{plain:?}"
    );
    assert!(plain[0].get("asyncRewake").is_none());
    util::write_hook_config(project, json!({"loop": {"auto_resume": true}}));
    cli_ok(project, &["install"]);
    let both = handlers(project);
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(both.iter().any(
        |h| text(h, "command").ends_with("ralph-stop-loop-controller --rewake")
            && h["asyncRewake"] == true
    ));
}

// ---------------------------------------------------------------------------
// Notifications.

/// A loopback HTTP server that answers 200 and hands over each body.
fn webhook_server() -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            if let Ok(value) = serde_json::from_slice(&body) {
                let _ = sender.send(value);
            }
        }
    });
    (url, receiver)
}

fn next_body(receiver: &mpsc::Receiver<Value>, event: &str) -> Value {
    loop {
        let body = receiver
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no {event} webhook within 30 s"));
        if body["event"] == event {
            return body;
        }
    }
}

#[test]
fn completion_notifies_the_desktop_and_the_webhook() {
    let temp = TempDir::new("endings-notify");
    let project = temp.path();
    let (url, bodies) = webhook_server();
    util::write_hook_config(
        project,
        json!({"notify": {"webhook": url, "sequence": "both"}}),
    );
    start(project, &["--max-tokens", "1M"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 100, 50);
    let input = stop_input(
        project,
        false,
        Some(transcript.path()),
        "All done. <promise>DONE</promise>",
    );
    let run = run_env("ralph-stop-loop-controller", project, &[], &input, &[]);
    let done = parse(&run.stdout);
    assert!(text(&done, "systemMessage").contains("COMPLETED"), "{done}");
    let sequence = text(&done, "terminalSequence");
    assert!(
        sequence.starts_with("\u{1b}]9;Ralph loop COMPLETED — ship it\u{7}"),
        "{sequence:?}"
    );
    assert!(
        sequence.contains("\u{1b}]777;notify;ralph-hooks;Ralph loop COMPLETED"),
        "{sequence:?}"
    );
    let body = next_body(&bodies, "completed");
    assert_eq!(body["goal"], "ship it");
    assert_eq!(body["status"], "COMPLETED");
    assert_eq!(body["reason"], "conditions_met");
    assert_eq!(body["spend"]["totalTokens"], 150);
    assert_eq!(body["spend"]["costIsEstimate"], true);
    assert!(body["loopId"].is_string());
}

#[test]
fn failure_budget_warning_and_usage_limit_reach_the_webhook() {
    let temp = TempDir::new("endings-notify-all");
    let project = temp.path();
    let (url, bodies) = webhook_server();
    util::write_hook_config(project, json!({"notify": {"webhook": url}}));
    start(project, &["--max-tokens", "1000"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 800, 50);
    let warned = stop(project, false, Some(transcript.path()));
    assert!(
        text(&warned, "terminalSequence").starts_with("\u{1b}]9;"),
        "{warned}"
    );
    let body = next_body(&bodies, "budget_warning");
    assert_eq!(body["status"], "RUNNING");

    let failed = stop_failure(
        project,
        "rate_limit",
        "You've hit your limit · resets 3am (UTC)",
        None,
    );
    assert_eq!(failed.code, 0, "{}", failed.stderr);
    let body = next_body(&bodies, "usage_limit");
    assert_eq!(body["status"], "PAUSED");
    assert!(body["resetsAt"].is_string(), "{body}");
    let failed = stop_failure(project, "server_error", "API Error: 500", None);
    assert_eq!(failed.code, 0);

    prompt(project, "go on", None, None);
    transcript.assistant("claude-sonnet-4-5", 300, 50);
    let ended = stop(project, false, Some(transcript.path()));
    assert!(
        text(&ended, "systemMessage").contains("FAILED: budget"),
        "{ended}"
    );
    let body = next_body(&bodies, "failed");
    assert_eq!(body["reason"], "budget");
    assert!(
        body["detail"].as_str().unwrap().contains("token budget"),
        "{body}"
    );
}

#[test]
fn desktop_notifications_can_be_turned_off() {
    let temp = TempDir::new("endings-notify-off");
    let project = temp.path();
    util::write_hook_config(project, json!({"notify": {"desktop": false}}));
    start(project, &[]);
    let input = stop_input(project, false, None, "<promise>DONE</promise>");
    let run = run_env("ralph-stop-loop-controller", project, &[], &input, &[]);
    let done = parse(&run.stdout);
    assert!(text(&done, "systemMessage").contains("COMPLETED"), "{done}");
    assert!(done.get("terminalSequence").is_none(), "{done}");
}

#[test]
fn a_dead_webhook_never_delays_or_breaks_a_hook() {
    let temp = TempDir::new("endings-notify-dead");
    let project = temp.path();
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    util::write_hook_config(
        project,
        json!({"notify": {"webhook": format!("http://127.0.0.1:{port}/x")}}),
    );
    start(project, &[]);
    let begun = std::time::Instant::now();
    let input = stop_input(project, false, None, "<promise>DONE</promise>");
    let run = run_env("ralph-stop-loop-controller", project, &[], &input, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(text(&parse(&run.stdout), "systemMessage").contains("COMPLETED"));
    // Generous: the POST runs in a detached process, not in the hook.
    assert!(
        begun.elapsed() < Duration::from_secs(8),
        "{:?}",
        begun.elapsed()
    );
    // The flush tries the body 3 times, then keeps it aside and says so.
    let failed = project.join(".claude/orchestrator/notify/failed");
    let outbox = project.join(".claude/orchestrator/notify/outbox");
    let gave_up = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        std::fs::read_dir(&failed).is_ok_and(|mut dir| dir.next().is_some())
            && events(project).contains("notify_failed")
    });
    assert!(gave_up, "no body in {} after 30 s", failed.display());
    let left = std::fs::read_dir(&outbox)
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "the outbox is empty once the body is given up");
}

// ---------------------------------------------------------------------------
// The rewake registration.

#[test]
fn a_rewake_loop_wakes_the_session_with_exit_2_and_never_meets_the_cap() {
    let temp = TempDir::new("endings-rewake");
    let project = temp.path();
    start(project, &["--rewake", "--max-iterations", "30"]);
    assert_eq!(loop_state(project)["rewake"], true);
    // The plain registration leaves a rewake loop alone (and continues
    // nothing else in its place).
    assert_eq!(stop(project, false, None), Value::Null);
    assert_eq!(loop_state(project)["iteration"], 0);

    let woken = "<task-notification>\n<summary>Stop hook feedback</summary>\n</task-notification>";
    for turn in 0..12 {
        let run = rewake_stop(project, turn > 0, "working on it");
        assert_eq!(run.code, 2, "turn {turn}: {}", run.stderr);
        assert_eq!(run.stdout, "", "nothing on stdout beside exit 2");
        assert!(
            run.stderr.contains("[RALPH LOOP — iteration"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("block cap") && !run.stderr.contains("Stop blocks in a row"));
        // The woken turn's prompt is no user's: it resets nothing.
        assert_eq!(prompt(project, woken, None, None), Value::Null);
        if turn == 11 {
            break;
        }
        // Alternate the check's output so stagnation does not end it.
        std::fs::write(project.join(format!("f{turn}.txt")), "x").unwrap();
    }
    let state = loop_state(project);
    assert_eq!(state["iteration"], 12);
    assert_eq!(state["status"], "RUNNING");

    // The end lets the turn end and waits for the user's next prompt.
    let done = rewake_stop(project, true, "<promise>DONE</promise>");
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(parse(&done.stdout).get("decision"), None, "{}", done.stdout);
    assert_eq!(loop_state(project)["status"], "COMPLETED");
    let said = prompt(project, "how did it go?", None, None);
    assert!(text(&said, "systemMessage").contains("COMPLETED"), "{said}");
    // Beside the end, the user hears where its completion receipt is.
    assert!(
        text(&said, "systemMessage").contains("ralph-hooks: Receipt: "),
        "{said}"
    );
}

#[test]
fn a_plain_loop_is_left_to_the_plain_registration() {
    let temp = TempDir::new("endings-rewake-plain");
    let project = temp.path();
    start(project, &[]);
    let run = rewake_stop(project, false, "working");
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);
    assert_eq!(loop_state(project)["iteration"], 0);
    assert_eq!(stop(project, false, None)["decision"], "block");
}

// ---------------------------------------------------------------------------
// The monitor.

#[test]
fn the_monitor_shows_the_loops_spend_and_budget() {
    let temp = TempDir::new("endings-monitor");
    let project = temp.path();
    start(project, &["--max-tokens", "10k"]);
    let mut transcript = Transcript::new(project);
    transcript.assistant("claude-sonnet-4-5", 3000, 2000);
    stop(project, false, Some(transcript.path()));
    let monitor = crate::monitor::Monitor::start(project, &[]);
    let (status, team) = monitor.get("/api/team-state");
    assert_eq!(status, 200);
    let card = team
        .as_array()
        .unwrap()
        .iter()
        .find(|agent| agent["loop"].is_object())
        .unwrap_or_else(|| panic!("no loop in {team}"));
    assert_eq!(card["loop"]["spend"]["tokens"]["input"], 3000, "{card}");
    assert_eq!(card["loop"]["budget"]["max_tokens"], 10000, "{card}");
    let agent = card["agentId"].as_str().unwrap().to_string();
    let (_, current) = monitor.get(&format!("/api/agents/{agent}/loop"));
    assert_eq!(current["spend"]["tokens"]["output"], 2000, "{current}");
    assert_eq!(current["history"][0]["tokens"]["input"], 3000, "{current}");
}

#[test]
fn a_capped_turn_is_notified() {
    // Seen at the next Stop: the desktop and the webhook.
    let (temp, transcript) = capped_loop("endings-cap-notify");
    let project = temp.path();
    let (url, bodies) = webhook_server();
    util::write_hook_config(project, json!({"notify": {"webhook": url}}));
    let next = stop(project, false, Some(transcript.path()));
    assert!(
        text(&next, "terminalSequence").contains("block cap"),
        "{next}"
    );
    let body = next_body(&bodies, "capped");
    assert_eq!(body["status"], "RUNNING");
    assert!(
        text(&body, "message").contains("block cap stopped it"),
        "{body}"
    );

    // Seen at a session start: the webhook only (the user is there).
    let (temp, transcript) = capped_loop("endings-cap-notify-start");
    let project = temp.path();
    let (url, bodies) = webhook_server();
    util::write_hook_config(project, json!({"notify": {"webhook": url}}));
    let started = session_start(project, Some(transcript.path()));
    assert!(started.get("terminalSequence").is_none(), "{started}");
    assert_eq!(next_body(&bodies, "capped")["event"], "capped");
}

// ---------------------------------------------------------------------------
// A check is project code the agent may edit (attack finding F4).

#[test]
fn a_check_that_cancels_the_loop_does_not_end_it() {
    for with_bwrap in [true, false] {
        if with_bwrap
            && util::require_tool("bwrap", "the confined check (Debian: bubblewrap)").is_none()
        {
            continue;
        }
        let temp = TempDir::new(if with_bwrap {
            "endings-check-cancels-bwrap"
        } else {
            "endings-check-cancels-plain"
        });
        let project = temp.path();
        let check = format!(
            "'{}' loop cancel; exit 1",
            util::bin("ralph-hooks").display()
        );
        start(project, &["--check", &check]);
        // Without bubblewrap: a PATH with only what the hook and the check
        // need, outside the temp folders (the hooks take no helper from a
        // folder the agent may write: `util::trusted`).
        let tools = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "endings-check-cancels-tools-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&tools);
        std::fs::create_dir_all(&tools).unwrap();
        for tool in ["sh", "git"] {
            let found = util::require_tool(tool, "the stop hook").unwrap();
            std::os::unix::fs::symlink(found, tools.join(tool)).unwrap();
        }
        let path = tools.display().to_string();
        let env: Vec<(&str, &str)> = if with_bwrap {
            Vec::new()
        } else {
            vec![("PATH", path.as_str())]
        };
        let out = stop_env(project, false, None, &env);
        assert_eq!(out["decision"], "block", "bwrap {with_bwrap}: {out}");
        let state = loop_state(project);
        assert_eq!(state["status"], "RUNNING", "bwrap {with_bwrap}: {state}");
        assert_eq!(state["iteration"], 1, "{state}");
        if !with_bwrap {
            assert!(
                events(project).contains("protected_restored"),
                "{}",
                events(project)
            );
            assert!(text(&out, "systemMessage").contains("put back"), "{out}");
        }
        // The next Stop still judges the same loop.
        let again = stop_env(project, true, None, &env);
        assert_eq!(again["decision"], "block", "{again}");
        assert_eq!(loop_state(project)["status"], "RUNNING");
    }
}

/// Issue 30 item 6: a loop that ends FAILED lists the problems still open
/// (the first ten, then a count of the rest), not just the condition's
/// name; and a project rule file that does not load is said at the start,
/// in every Stop message and in the events log.
#[test]
fn a_failed_loop_lists_what_remains_and_a_broken_rule_file_is_said_throughout() {
    let dir = TempDir::new("endings-remaining");
    let project = dir.path();
    git_init(project);
    util::write_fake_lsp_json(project, &["--mode", "normal"]);
    for n in 0..12 {
        std::fs::write(
            project.join(format!("f{n:02}.fake")),
            format!("ERROR: problem {n}\n"),
        )
        .unwrap();
    }
    std::fs::write(project.join("sgconfig.yml"), "ruleDirs: [\n").unwrap();
    let started = cli_ok(
        project,
        &["loop", "start", "fix them all", "--max-iterations", "2"],
    );
    assert!(
        started.contains("Note — ast-grep: ") && started.contains("sgconfig.yml: not valid YAML"),
        "{started}"
    );
    let start_event = events(project)
        .lines()
        .find(|line| line.contains("\"loop_started\""))
        .unwrap_or_default()
        .to_string();
    assert!(start_event.contains("ruleProblems"), "{start_event}");

    let blocked = stop(project, false, None);
    assert_eq!(blocked["decision"], "block", "{blocked}");
    let message = text(&blocked, "systemMessage");
    assert!(
        message.contains("sgconfig.yml: not valid YAML"),
        "{message}"
    );
    assert!(
        text(&blocked, "reason").contains("ast-grep rules not loaded"),
        "{blocked}"
    );

    let failed = stop(project, true, None);
    let message = text(&failed, "systemMessage");
    assert!(
        message.contains("FAILED: max iterations exceeded"),
        "{message}"
    );
    assert!(
        message.contains("Still failing:\n- project: 12 errors remain:\n    f00.fake:1:1 error [fake E1] problem 0\n"),
        "{message}"
    );
    assert!(
        message.contains("    f09.fake:1:1 error [fake E1] problem 9\n    … and 2 more (2 errors)"),
        "{message}"
    );
    assert!(!message.contains("problem 10"), "bounded: {message}");
    assert!(
        message.contains("sgconfig.yml: not valid YAML"),
        "{message}"
    );
    assert_eq!(loop_state(project)["status"], "FAILED");
    let stop_events = events(project)
        .lines()
        .filter(|line| line.contains("ruleProblems"))
        .count();
    assert!(
        stop_events >= 3,
        "start and both stops: {}",
        events(project)
    );
}
