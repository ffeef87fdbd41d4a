//! End-to-end tests with the real Claude Code CLI: every scenario under
//! `tests/e2e/scenarios/<name>/` runs `claude -p` in a fresh project where
//! `ralph-hooks install` registered our freshly built hooks, against the
//! scripted mock Messages API on 127.0.0.1, offline.
//!
//! The work is done by `tests/e2e/run_scenario.py` (the runner; the mock is
//! `tests/e2e/mock_api.py`); this module finds what it needs, runs every
//! scenario (two at a time; `E2E_JOBS=N` changes that, `E2E_FILTER=text`
//! runs only the scenarios whose name contains it), and reports each one's
//! outcome and timing. See `tests/e2e/README.md` for the scenario format.
//!
//! The claude binary is `$CLAUDE_BIN`, else the one `.ci/install-claude.sh`
//! installs (`$RALPH_HOOKS_CLAUDE_PREFIX`, default
//! `~/.cache/ralph-hooks/claude-code`, then `node_modules/.bin/claude`), else
//! `claude` on PATH. Without it, or without python3, the test prints why and
//! passes, unless `RALPH_HOOKS_REQUIRE_SERVERS=1` (as in CI) makes that a
//! failure. A failing scenario's folder (project, HOME, the mock's request log,
//! claude's stream-json) is kept and its path printed; `KEEP_TEMP=1` keeps
//! every one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ralph_hooks::util::process::GroupChild;

use crate::util;

/// How long one scenario may take in all before it is killed. The runner's
/// own limit on claude (60 s unless the scenario sets another) comes first.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(180);

pub fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("e2e")
}

/// The folder that holds the built binaries: `ralph-hooks install` finds the
/// hook binaries beside itself, and claude's Bash tool finds `ralph-hooks`
/// on PATH through it.
fn bin_dir() -> PathBuf {
    let cli = Path::new(env!("CARGO_BIN_EXE_ralph-hooks"));
    let dir = cli
        .parent()
        .expect("binary path has a parent")
        .to_path_buf();
    for name in [
        "ralph-stop-loop-controller",
        "ralph-session-start",
        "ralph-pre-tool-stop-guard",
        "ralph-post-tool-lsp-diagnostic",
    ] {
        assert_eq!(
            util::bin(name).parent(),
            Some(dir.as_path()),
            "{name} is not built beside ralph-hooks"
        );
    }
    dir
}

/// Where `.ci/install-claude.sh` puts the CLI.
fn installed_claude() -> Option<PathBuf> {
    let prefix = match std::env::var_os("RALPH_HOOKS_CLAUDE_PREFIX") {
        Some(prefix) if !prefix.is_empty() => PathBuf::from(prefix),
        _ => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache")
            .join("ralph-hooks")
            .join("claude-code"),
    };
    Some(prefix.join("node_modules").join(".bin").join("claude"))
}

/// `$CLAUDE_BIN`, else the install prefix, else PATH; `None` (after saying
/// why) when there is none and it is not required.
pub fn find_claude() -> Option<PathBuf> {
    let explicit = std::env::var_os("CLAUDE_BIN")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let why = match explicit {
        // An explicit choice that is wrong must not quietly test another binary.
        Some(path) if path.is_file() => return Some(path),
        Some(path) => format!("$CLAUDE_BIN ({}) is not a file", path.display()),
        None => {
            let candidates = [installed_claude(), which::which("claude").ok()];
            if let Some(found) = candidates.into_iter().flatten().find(|path| path.is_file()) {
                return Some(found);
            }
            "the claude binary was not found (not at the prefix of .ci/install-claude.sh, nor on PATH); run `bash .ci/install-claude.sh`".to_string()
        }
    };
    if util::servers_required() {
        panic!("the end-to-end tests are required (RALPH_HOOKS_REQUIRE_SERVERS=1), but {why}");
    }
    util::skip("the end-to-end tests (real Claude Code CLI)", &why);
    None
}

fn scenarios() -> Vec<PathBuf> {
    let root = e2e_dir().join("scenarios");
    let filter = std::env::var("E2E_FILTER").ok();
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", root.display()))
        .map(|entry| entry.expect("read scenario folder entry").path())
        .filter(|path| path.join("script.json").is_file())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            filter.as_deref().is_none_or(|wanted| name.contains(wanted))
        })
        .filter(|path| has_required_tools(path))
        .collect();
    found.sort();
    found
}

/// Whether the tools a scenario's `scenario.json` lists under `requires`
/// (e.g. bubblewrap and socat for Claude Code's sandbox) are on PATH; a
/// missing one skips the scenario with the reason printed, or fails the
/// test under `RALPH_HOOKS_REQUIRE_SERVERS=1`.
fn has_required_tools(scenario: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(scenario.join("scenario.json")) else {
        return true;
    };
    let options: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{}/scenario.json: {error}", scenario.display()));
    let name = scenario.file_name().unwrap().to_string_lossy();
    let required = options["requires"].as_array().cloned().unwrap_or_default();
    required
        .iter()
        .filter_map(serde_json::Value::as_str)
        .all(|tool| util::require_tool(tool, &format!("the scenario {name}")).is_some())
}

pub struct Outcome {
    pub name: String,
    pub passed: bool,
    pub seconds: f64,
    pub report: String,
}

/// Runs one scenario through the runner; its output goes to a file in the
/// scenario's folder so a chatty run cannot block on a full pipe.
pub fn run_scenario(python: &Path, claude: &Path, bin_dir: &Path, scenario: &Path) -> Outcome {
    let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
    let out = std::env::temp_dir().join(format!("ralph-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("create the scenario's output folder");
    let log_path = out.join("runner.txt");
    let log = std::fs::File::create(&log_path).expect("create the runner log");
    let started = Instant::now();
    let mut command = Command::new(python);
    command
        .arg(e2e_dir().join("run_scenario.py"))
        .arg(scenario)
        .arg("--out")
        .arg(&out)
        .arg("--bin-dir")
        .arg(bin_dir)
        .arg("--claude")
        .arg(claude)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone the log handle"))
        .stderr(log);
    let status = GroupChild::spawn(&mut command)
        .and_then(|mut child| {
            let status = child.wait_timeout(SCENARIO_DEADLINE)?;
            if status.is_none() {
                child.kill();
            }
            Ok(status)
        })
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
    let seconds = started.elapsed().as_secs_f64();
    let mut report = std::fs::read_to_string(&log_path).unwrap_or_default();
    let passed = status.is_some_and(|status| status.success());
    if status.is_none() {
        report.push_str(&format!(
            "\nthe runner did not finish within {} s and was killed\n",
            SCENARIO_DEADLINE.as_secs()
        ));
    }
    if passed && std::env::var_os("KEEP_TEMP").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    } else {
        report.push_str(&format!(
            "(the run's files are kept in {})\n",
            out.display()
        ));
    }
    Outcome {
        name,
        passed,
        seconds,
        report,
    }
}

#[test]
fn e2e_scenarios() {
    let Some(claude) = find_claude() else {
        return;
    };
    let Some(python) = util::require_tool(
        "python3",
        "the end-to-end tests (the mock Messages API and the runner are Python)",
    ) else {
        return;
    };
    let bin_dir = bin_dir();
    let scenarios = scenarios();
    assert!(
        !scenarios.is_empty(),
        "no scenario under {} matches E2E_FILTER",
        e2e_dir().join("scenarios").display()
    );
    let jobs = std::env::var("E2E_JOBS")
        .ok()
        .and_then(|jobs| jobs.parse::<usize>().ok())
        .unwrap_or(2)
        .clamp(1, scenarios.len());
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                while let Some(scenario) = scenarios.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let outcome = run_scenario(&python, &claude, &bin_dir, scenario);
                    outcomes.lock().unwrap().push(outcome);
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by(|a, b| a.name.cmp(&b.name));
    eprintln!("claude: {}", claude.display());
    for outcome in &outcomes {
        // The runner says so when it could not make a network namespace.
        let isolation = if outcome.report.contains("network NOT ISOLATED") {
            " (without network isolation)"
        } else {
            ""
        };
        eprintln!(
            "e2e {:<4} {:<40} {:>5.1} s{isolation}",
            if outcome.passed { "ok" } else { "FAIL" },
            outcome.name,
            outcome.seconds
        );
    }
    eprintln!(
        "e2e: {} scenario(s) in {:.1} s with {jobs} job(s)",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|outcome| !outcome.passed)
        .map(|outcome| format!("=== {}\n{}", outcome.name, outcome.report))
        .collect();
    assert!(
        failures.is_empty(),
        "{} end-to-end scenario(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// One HTTP/1.1 POST on a fresh connection; returns (status line, body).
fn post(port: u16, path: &str, body: &serde_json::Value) -> (String, String) {
    use std::io::{Read as _, Write as _};
    let payload = body.to_string();
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the mock");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    )
    .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the mock's reply");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("an HTTP reply has a blank line after its headers");
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// The data of each server-sent event, parsed.
fn sse_events(body: &str) -> Vec<serde_json::Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("each SSE data line is JSON"))
        .collect()
}

/// The mock on its own, without Claude Code: main-loop calls take the turns
/// in order (streamed or not), side calls take none, `expect` is judged and
/// logged, and a call after the last turn is answered and flagged.
#[test]
fn e2e_mock_answers_from_its_script() {
    use serde_json::json;
    let Some(python) = util::require_tool("python3", "the mock Messages API self-test") else {
        return;
    };
    let dir = util::TempDir::new("e2e-mock");
    let script = json!({"turns": [
        {"expect": {"contains": ["hello there"], "not_contains": ["nope"]},
         "text": "first reply, long enough to be split over several deltas",
         "tool_use": {"name": "Bash", "input": {"command": "echo {{WHO}} && ralph-hooks loop status"}}},
        {"expect": {"contains": ["never sent"], "tool_result_error": true}, "text": "second"}
    ]});
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let log = dir.path().join("requests.jsonl");
    let port_file = dir.path().join("port");
    let mut command = Command::new(&python);
    command
        .arg(e2e_dir().join("mock_api.py"))
        .arg("--script")
        .arg(dir.path().join("script.json"))
        .arg("--log")
        .arg(&log)
        .arg("--port-file")
        .arg(&port_file)
        .args(["--subst", "WHO=e2e"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let mut mock = GroupChild::spawn(&mut command).expect("start the mock");
    let deadline = Instant::now() + Duration::from_secs(10);
    let port: u16 = loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            break port;
        }
        assert!(
            mock.wait_timeout(Duration::from_millis(20))
                .unwrap()
                .is_none(),
            "the mock exited before listening"
        );
        assert!(
            Instant::now() < deadline,
            "the mock did not start listening"
        );
    };
    let tools = json!([{"name": "Bash", "input_schema": {"type": "object"}}]);

    // Turn 0, streamed: text deltas and tool-input deltas reassemble.
    let (status, body) = post(
        port,
        "/v1/messages?beta=true",
        &json!({"model": "m", "max_tokens": 100, "stream": true, "tools": tools,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}]}),
    );
    assert!(status.contains("200"), "{status}");
    let events = sse_events(&body);
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(kinds.last(), Some(&"message_stop"));
    let text: String = events
        .iter()
        .filter_map(|event| event["delta"]["text"].as_str())
        .collect();
    assert_eq!(
        text,
        "first reply, long enough to be split over several deltas"
    );
    assert!(
        events
            .iter()
            .filter(|event| event["delta"]["type"] == "text_delta")
            .count()
            > 1,
        "the text is streamed in pieces"
    );
    let tool_start = events
        .iter()
        .find(|event| event["content_block"]["type"] == "tool_use")
        .expect("a tool_use block starts");
    assert_eq!(tool_start["content_block"]["name"], "Bash");
    let input: String = events
        .iter()
        .filter_map(|event| event["delta"]["partial_json"].as_str())
        .collect();
    let input: serde_json::Value = serde_json::from_str(&input).expect("tool input reassembles");
    assert_eq!(
        input,
        json!({"command": "echo e2e && ralph-hooks loop status"})
    );
    let stop = events
        .iter()
        .find(|event| event["type"] == "message_delta")
        .unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");

    // A side call (no tools) is answered without using a turn.
    let (_, body) = post(
        port,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "title?"}]}),
    );
    let side: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(side["content"][0]["type"], "text");

    // Turn 1, not streamed; its expectation fails and is logged as such.
    let (_, body) = post(
        port,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 100, "tools": tools, "messages": [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "fine"}]}]}),
    );
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        reply["content"],
        json!([{"type": "text", "text": "second"}])
    );
    assert_eq!(reply["stop_reason"], "end_turn");

    // Past the end of the script.
    let (_, body) = post(
        port,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 100, "tools": tools, "messages": [{"role": "user", "content": "more"}]}),
    );
    assert!(body.contains("MOCK-SCRIPT-EXHAUSTED"), "{body}");
    mock.kill();

    let records: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("the mock wrote its log")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|record| record["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["main", "side", "main", "main-exhausted"]);
    assert_eq!(records[0]["turn"], 0);
    assert_eq!(records[0]["expect"]["ok"], true);
    assert_eq!(records[2]["turn"], 1);
    assert_eq!(records[2]["expect"]["ok"], false);
    let failures = records[2]["expect"]["failures"].to_string();
    assert!(
        failures.contains("never sent") && failures.contains("is_error"),
        "{failures}"
    );
    // Only the messages after the last assistant message count as new.
    assert!(
        !records[2]["expect"]["new_input"]
            .as_str()
            .unwrap()
            .contains("hello there")
    );
}
