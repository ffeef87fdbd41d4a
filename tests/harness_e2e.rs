//! End to end under another agent harness: the real Codex CLI
//! (`@openai/codex`, installed by `.ci/install-harnesses.sh`) runs offline
//! against a scripted mock of OpenAI's Responses API on 127.0.0.1, in a
//! project where `ralph-hooks install --harness codex` wrote
//! `.codex/hooks.json` for our freshly built binaries.
//!
//! The loop: `test -f done.txt` must pass. The mock's first answer ends the
//! turn without doing the work, so the Stop hook blocks and Codex sends the
//! loop's follow-up as the next prompt; seeing it, the mock runs
//! `touch done.txt` through Codex's shell tool, then ends the turn again;
//! the check passes and the loop is COMPLETED.
//!
//! Codex runs project hooks only once they are trusted (its `/hooks`
//! review); the test passes `--dangerously-bypass-hook-trust`, meant for
//! automation that vets its hooks, as this one does.
//!
//! The codex binary is `$CODEX_BIN`, else the one `.ci/install-harnesses.sh`
//! installs (`$RALPH_HOOKS_HARNESS_PREFIX`, default
//! `~/.cache/ralph-hooks/harnesses`, then `node_modules/.bin/codex`). Without
//! it the test says why and passes, unless `RALPH_HOOKS_REQUIRE_SERVERS=1`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// How long Codex may take for the whole loop before it is killed.
const DEADLINE: Duration = Duration::from_secs(240);

fn find_codex() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CODEX_BIN").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let prefix = match std::env::var_os("RALPH_HOOKS_HARNESS_PREFIX") {
        Some(prefix) if !prefix.is_empty() => PathBuf::from(prefix),
        _ => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache")
            .join("ralph-hooks")
            .join("harnesses"),
    };
    let path = prefix.join("node_modules").join(".bin").join("codex");
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "the codex binary was not found at {} (run `bash .ci/install-harnesses.sh`)",
        path.display()
    );
    if util::servers_required() {
        panic!("the Codex end-to-end test is required (RALPH_HOOKS_REQUIRE_SERVERS=1), but {why}");
    }
    eprintln!("skipping the Codex end-to-end test: {why}");
    None
}

/// What the mock saw: each request body, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// The scripted model: what to answer to one Responses API request.
fn script(request: &Value) -> Value {
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let last = input.last().cloned().unwrap_or(Value::Null);
    let text = serde_json::to_string(&input).unwrap_or_default();
    if last["type"] == "function_call_output" {
        return json!({"type": "message", "role": "assistant", "id": "msg_done",
            "content": [{"type": "output_text", "text": "I created done.txt; the check should pass now."}]});
    }
    if text.contains("[RALPH LOOP — iteration") {
        return json!({"type": "function_call", "id": "fc_1", "call_id": "call_touch",
            "name": "exec_command", "arguments": json!({"cmd": "touch done.txt"}).to_string()});
    }
    json!({"type": "message", "role": "assistant", "id": "msg_first",
        "content": [{"type": "output_text", "text": "I looked at the project. All done."}]})
}

fn sse(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

/// Serves one HTTP/1.1 connection (keep-alive) until the client closes it.
fn serve(stream: TcpStream, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (content_type, reply) = if request_line.starts_with("POST")
            && request_line.contains("/responses")
        {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let n = {
                let mut seen = seen.lock().unwrap();
                seen.push(request.clone());
                seen.len()
            };
            let item = script(&request);
            let id = format!("resp_{n}");
            let mut events = sse("response.created", json!({"response": {"id": id}}));
            events.push_str(&sse("response.output_item.done", json!({"item": item})));
            events.push_str(&sse(
                "response.completed",
                json!({"response": {"id": id, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
            ));
            ("text/event-stream", events)
        } else {
            (
                "application/json",
                json!({"data": [], "models": []}).to_string(),
            )
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(reply.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// Starts the mock on a free loopback port; returns the port.
fn start_mock(seen: Seen) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(stream, &seen));
        }
    });
    port
}

fn run_cli(project: &Path, args: &[&str]) -> String {
    let output = util::command("ralph-hooks", project)
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "ralph-hooks {args:?} failed:\n{text}"
    );
    text
}

#[test]
fn codex_runs_a_loop_with_a_check_to_completion() {
    let Some(codex) = find_codex() else {
        return;
    };
    let temp = TempDir::new("codex-e2e");
    let project = temp.path().join("project");
    let codex_home = temp.path().join("codex-home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&codex_home).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .status()
        .unwrap();
    assert!(git.success());

    let installed = run_cli(&project, &["install", "--harness", "codex"]);
    assert!(project.join(".codex/hooks.json").is_file(), "{installed}");
    run_cli(
        &project,
        &[
            "loop",
            "start",
            "create done.txt",
            "--check",
            "test -f done.txt",
            "--max-iterations",
            "5",
        ],
    );

    let seen: Seen = Arc::default();
    let port = start_mock(seen.clone());
    let config = format!(
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();

    let mut command = Command::new(&codex);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CLAUDE")
            || key.starts_with("CODEX")
            || key.starts_with("OPENAI")
            || (key.starts_with("RALPH_HOOKS") && key != "RALPH_HOOKS_REQUIRE_SERVERS")
        {
            command.env_remove(&key);
        }
    }
    command
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
        ])
        .arg(&project)
        .arg("Do the work of the loop.")
        .env("CODEX_HOME", &codex_home)
        .env("RALPH_HOOKS_DAEMON", "0")
        .env("XDG_STATE_HOME", util::test_state_home())
        .current_dir(&project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut transcript = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut transcript);
    let _ = child.stderr.take().unwrap().read_to_string(&mut transcript);
    let loop_state: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/loop.json"))
            .unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    let requests = seen.lock().unwrap().clone();
    let report = format!(
        "codex exit: {status:?} after {:.1} s\nrequests to the mock: {}\nloop.json: {loop_state:#}\ncodex output:\n{transcript}",
        started.elapsed().as_secs_f64(),
        requests.len()
    );
    assert!(status.is_some_and(|s| s.success()), "{report}");
    assert!(
        project.join("done.txt").is_file(),
        "the agent never did the work\n{report}"
    );
    assert_eq!(loop_state["status"], "COMPLETED", "{report}");
    assert_eq!(
        loop_state["completion_reason"], "conditions_met",
        "{report}"
    );
    assert_eq!(
        loop_state["iteration"], 1,
        "one blocked stop, then done\n{report}"
    );
    assert!(
        requests.iter().any(|request| request["input"]
            .to_string()
            .contains("[RALPH LOOP — iteration 1/5]")),
        "the loop's follow-up never reached the model as a prompt\n{report}"
    );
    assert!(
        transcript.contains("hook: Stop Blocked"),
        "Codex did not report the Stop hook's block\n{report}"
    );
}
