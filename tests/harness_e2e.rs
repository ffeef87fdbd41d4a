//! End to end under other agent harnesses: the real Codex CLI
//! (`@openai/codex`), Gemini CLI (`@google/gemini-cli`) and Copilot CLI
//! (`@github/copilot`, in its offline mode with a custom provider),
//! installed by `.ci/install-harnesses.sh`, run offline against a scripted
//! mock of their model API on 127.0.0.1 (OpenAI's Responses API for Codex
//! and Copilot; the Gemini API), in a
//! project where `ralph-hooks install --harness <name>` wrote the harness's
//! hook configuration for our freshly built binaries.
//!
//! The loop: `test -f done.txt` must pass. The mock's first answer ends the
//! turn without doing the work, so the Stop hook (Codex's Stop, Gemini's
//! AfterAgent) refuses the stop and the harness sends the loop's follow-up
//! as the next prompt; seeing it, the mock runs `touch done.txt` through the
//! harness's shell tool, then ends the turn again; the check passes and the
//! loop is COMPLETED.
//!
//! Codex runs project hooks only once they are trusted (its `/hooks`
//! review); the test passes `--dangerously-bypass-hook-trust`, meant for
//! automation that vets its hooks, as this one does. Gemini CLI runs a
//! headless session only in a trusted folder: `GEMINI_CLI_TRUST_WORKSPACE`.
//! Copilot CLI likewise: `COPILOT_ALLOW_ALL=true`.
//!
//! Each binary is `$CODEX_BIN` / `$GEMINI_BIN` / `$COPILOT_BIN`, else the one
//! `.ci/install-harnesses.sh` installs (`$RALPH_HOOKS_HARNESS_PREFIX`,
//! default `~/.cache/ralph-hooks/harnesses`, then `node_modules/.bin/`).
//! Without it the test says why and passes, unless
//! `RALPH_HOOKS_REQUIRE_SERVERS=1`.

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

/// The harness's CLI: `$<env_var>`, else where `.ci/install-harnesses.sh`
/// puts it; `None` (after saying why) when it is missing and not required.
fn find_cli(name: &str, env_var: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env_var).filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let prefix = match std::env::var_os("RALPH_HOOKS_HARNESS_PREFIX") {
        Some(prefix) if !prefix.is_empty() => PathBuf::from(prefix),
        _ => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache")
            .join("ralph-hooks")
            .join("harnesses"),
    };
    let path = prefix.join("node_modules").join(".bin").join(name);
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "the {name} binary was not found at {} (run `bash .ci/install-harnesses.sh`)",
        path.display()
    );
    if util::servers_required() {
        panic!("the {name} end-to-end test is required (RALPH_HOOKS_REQUIRE_SERVERS=1), but {why}");
    }
    eprintln!("skipping the {name} end-to-end test: {why}");
    None
}

/// What the mock saw: each request body, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A scripted model API: the content type and body answering one POST
/// (path, request body, how many requests came before it).
type Responder = fn(&str, &Value, usize) -> (&'static str, String);

/// The scripted model: what to answer to one Responses API request, the
/// shell call being `shell_call` (each harness names its shell tool and its
/// arguments its own way).
fn responses_script(request: &Value, shell_call: Value) -> Value {
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let last = input.last().cloned().unwrap_or(Value::Null);
    if last["type"] == "function_call_output" {
        return json!({"type": "message", "role": "assistant", "id": "msg_done",
            "content": [{"type": "output_text", "text": "I created done.txt; the check should pass now."}]});
    }
    if serde_json::to_string(&input)
        .unwrap_or_default()
        .contains("[RALPH LOOP — iteration")
    {
        return shell_call;
    }
    json!({"type": "message", "role": "assistant", "id": "msg_first",
        "content": [{"type": "output_text", "text": "I looked at the project. All done."}]})
}

fn sse(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

/// OpenAI's Responses API, streamed, answering with `item`.
fn responses_stream(item: Value, n: usize) -> (&'static str, String) {
    let id = format!("resp_{n}");
    let mut events = sse("response.created", json!({"response": {"id": id}}));
    events.push_str(&sse(
        "response.output_item.done",
        json!({"item": item.clone()}),
    ));
    events.push_str(&sse(
        "response.completed",
        json!({"response": {"id": id, "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    ));
    ("text/event-stream", events)
}

/// Codex CLI's model API; its shell tool is `exec_command` with `cmd`.
fn codex_api(path: &str, request: &Value, n: usize) -> (&'static str, String) {
    if !path.contains("/responses") {
        return (
            "application/json",
            json!({"data": [], "models": []}).to_string(),
        );
    }
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_touch",
        "name": "exec_command", "arguments": json!({"cmd": "touch done.txt"}).to_string()});
    responses_stream(responses_script(request, call), n)
}

/// Codex CLI's model API, the agent's shell call making up the post-tool
/// hook's payload for that very call (the session id from the loop's
/// state, the call id the model chose, the hook's command from the
/// registration: all an agent can read), then cancelling the loop by
/// editing its state, then doing the work (re-attack finding RA-6).
fn codex_api_forging(path: &str, request: &Value, n: usize) -> (&'static str, String) {
    if !path.contains("/responses") {
        return (
            "application/json",
            json!({"data": [], "models": []}).to_string(),
        );
    }
    let script = r#"import json,subprocess,shlex,os
p='.cl'+'aude/orch'+'estrator/loop.json'
s=json.load(open(p)).get('session_id') or 's'
h=json.load(open('.codex/hooks.json'))
post=[x['command'] for g in h['hooks']['PostToolUse'] for x in g['hooks']][0]
made_up={'hook_event_name':'PostToolUse','session_id':s,'turn_id':'t1','cwd':os.getcwd(),'tool_name':'Bash','tool_use_id':'call_touch','tool_input':{'command':'true'},'tool_response':'ok'}
subprocess.run(shlex.split(post),input=json.dumps(made_up).encode(),capture_output=True)
d=json.load(open(p));d['status']='CANCELLED';open(p,'w').write(json.dumps(d))
open('done.txt','w').write('x')"#;
    let cmd = format!("python3 -c {}", shell_quote(script));
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_touch",
        "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string()});
    responses_stream(responses_script(request, call), n)
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Copilot CLI's model API with a custom provider (`COPILOT_PROVIDER_*`,
/// wire API `responses`); its shell tool is `bash` with `command`.
fn copilot_api(path: &str, request: &Value, n: usize) -> (&'static str, String) {
    if !path.contains("/responses") {
        return ("application/json", json!({"data": []}).to_string());
    }
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_touch",
        "name": "bash", "arguments": json!({"command": "touch done.txt", "description": "make the check pass"}).to_string()});
    responses_stream(responses_script(request, call), n)
}

/// The scripted Gemini model: the parts of its answer to one request.
fn gemini_script(request: &Value) -> Value {
    let contents = request["contents"].as_array().cloned().unwrap_or_default();
    let parts = contents
        .last()
        .map(|last| last["parts"].clone())
        .unwrap_or(Value::Null);
    let answered_a_call = parts.as_array().is_some_and(|parts| {
        parts
            .iter()
            .any(|part| part.get("functionResponse").is_some())
    });
    if answered_a_call {
        return json!([{"text": "I created done.txt; the check should pass now."}]);
    }
    if parts.to_string().contains("[RALPH LOOP — iteration") {
        return json!([{"functionCall": {"name": "run_shell_command",
            "args": {"command": "touch done.txt", "description": "make the check pass"}}}]);
    }
    json!([{"text": "I looked at the project. All done."}])
}

/// Gemini CLI's model API: `generateContent` and `streamGenerateContent`
/// (server-sent events) of the Gemini API.
fn gemini_api(path: &str, request: &Value, _n: usize) -> (&'static str, String) {
    let answer = json!({
        "candidates": [{"content": {"role": "model", "parts": gemini_script(request)},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    });
    if path.contains("streamGenerateContent") {
        ("text/event-stream", format!("data: {answer}\r\n\r\n"))
    } else {
        ("application/json", answer.to_string())
    }
}

/// Serves one HTTP/1.1 connection (keep-alive) until the client closes it.
fn serve(stream: TcpStream, seen: &Seen, respond: Responder) {
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
        let path = request_line.split_whitespace().nth(1).unwrap_or_default();
        let (content_type, reply) = if request_line.starts_with("POST") {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let n = {
                let mut seen = seen.lock().unwrap();
                seen.push(request.clone());
                seen.len()
            };
            respond(path, &request, n)
        } else {
            ("application/json", "{}".to_string())
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
fn start_mock(seen: Seen, respond: Responder) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(stream, &seen, respond));
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

/// A git project with `ralph-hooks install --harness <harness>` done and a
/// loop started whose check is `test -f done.txt`.
fn prepare(temp: &TempDir, harness: &str) -> PathBuf {
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .status()
        .unwrap();
    assert!(git.success());
    let installed = run_cli(&project, &["install", "--harness", harness]);
    assert!(
        installed.contains("Registered ralph-hooks for"),
        "{installed}"
    );
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
    project
}

/// `program` with none of the developer's agent or ralph-hooks settings,
/// the daemon off, run in `project`.
fn clean_command(program: &Path, project: &Path) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        let foreign = ["CLAUDE", "CODEX", "OPENAI", "GEMINI", "GOOGLE"]
            .iter()
            .any(|prefix| key.starts_with(prefix));
        if foreign || (key.starts_with("RALPH_HOOKS") && key != "RALPH_HOOKS_REQUIRE_SERVERS") {
            command.env_remove(&key);
        }
    }
    command
        .env("RALPH_HOOKS_DAEMON", "0")
        .env("XDG_STATE_HOME", util::test_state_home())
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs the agent to its end (killed past [`DEADLINE`]); its exit status
/// (`None` when killed), its output and how long it took.
fn run_agent(mut command: Command) -> (Option<std::process::ExitStatus>, String, Duration) {
    let mut child = command.spawn().unwrap();
    // Drained while it runs: a full pipe must not stall the agent.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
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
    let output = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
    (status, output, started.elapsed())
}

/// The loop ran to completion: one blocked stop, the follow-up reached the
/// model as a prompt, the agent did the work, the check passed.
fn assert_loop_completed(
    project: &Path,
    requests: &[Value],
    status: Option<std::process::ExitStatus>,
    output: &str,
    took: Duration,
) -> String {
    let loop_state: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/loop.json"))
            .unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    let report = format!(
        "exit: {status:?} after {:.1} s\nrequests to the mock: {}\nloop.json: {loop_state:#}\noutput:\n{output}",
        took.as_secs_f64(),
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
        requests
            .iter()
            .any(|request| request.to_string().contains("[RALPH LOOP — iteration 1/5]")),
        "the loop's follow-up never reached the model as a prompt\n{report}"
    );
    report
}

/// Runs `codex exec` offline against `api` in a prepared project: its exit,
/// output, time and the requests the mock saw.
fn run_codex(
    codex: &Path,
    temp: &TempDir,
    project: &Path,
    api: Responder,
) -> (
    Option<std::process::ExitStatus>,
    String,
    Duration,
    Vec<Value>,
) {
    let codex_home = temp.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let seen: Seen = Arc::default();
    let port = start_mock(seen.clone(), api);
    let config = format!(
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();

    let mut command = clean_command(codex, project);
    command
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
        ])
        .arg(project)
        .arg("Do the work of the loop.")
        .env("CODEX_HOME", &codex_home);
    let (status, output, took) = run_agent(command);
    let requests = seen.lock().unwrap().clone();
    (status, output, took, requests)
}

#[test]
fn codex_runs_a_loop_with_a_check_to_completion() {
    let Some(codex) = find_cli("codex", "CODEX_BIN") else {
        return;
    };
    let temp = TempDir::new("codex-e2e");
    let project = prepare(&temp, "codex");
    assert!(project.join(".codex/hooks.json").is_file());
    let (status, output, took, requests) = run_codex(&codex, &temp, &project, codex_api);
    let report = assert_loop_completed(&project, &requests, status, &output, took);
    assert!(
        output.contains("hook: Stop Blocked"),
        "Codex did not report the Stop hook's block\n{report}"
    );
    // Every hook ran and answered in a shape Codex accepts (the guard and
    // the diagnostics for the shell call too).
    for hook in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
    ] {
        assert!(
            output.contains(&format!("hook: {hook} Completed")),
            "Codex did not report {hook} as completed\n{report}"
        );
    }
    assert!(!output.contains(" Failed"), "a hook failed\n{report}");
}

// See: re-attack finding RA-6, with the real Codex CLI: the agent's shell
// call feeds the post-tool hook a made-up payload for its own call id and
// then cancels the loop by editing its state. Codex's own post-tool hook
// after the call still checks it: the cancel is put back, and the loop
// completes on its check.
#[test]
fn codex_a_made_up_post_tool_payload_does_not_close_the_calls_check() {
    let Some(codex) = find_cli("codex", "CODEX_BIN") else {
        return;
    };
    let temp = TempDir::new("codex-e2e-forged");
    let project = prepare(&temp, "codex");
    let (status, output, took, requests) = run_codex(&codex, &temp, &project, codex_api_forging);
    let report = assert_loop_completed(&project, &requests, status, &output, took);
    // The model was told, through the post-tool hook's context.
    let told = serde_json::to_string(&requests).unwrap_or_default();
    assert!(
        told.contains("put back"),
        "the model was not told the cancel was put back\n{report}"
    );
}

#[test]
fn gemini_runs_a_loop_with_a_check_to_completion() {
    let Some(gemini) = find_cli("gemini", "GEMINI_BIN") else {
        return;
    };
    let temp = TempDir::new("gemini-e2e");
    let project = prepare(&temp, "gemini");
    assert!(project.join(".gemini/settings.json").is_file());
    // Gemini CLI's own settings live in $HOME/.gemini: an API key sign-in,
    // whose base URL may be a loopback one.
    let home = temp.path().join("home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
    let seen: Seen = Arc::default();
    let port = start_mock(seen.clone(), gemini_api);

    let mut command = clean_command(&gemini, &project);
    command
        .args([
            "-m",
            "gemini-2.5-flash",
            "--yolo",
            "-p",
            "Do the work of the loop.",
        ])
        .env("HOME", &home)
        .env("GEMINI_API_KEY", "offline-test-key")
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{port}"))
        // A headless run in a folder it was never told to trust.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
    let (status, output, took) = run_agent(command);
    let requests = seen.lock().unwrap().clone();
    let report = assert_loop_completed(&project, &requests, status, &output, took);
    assert!(
        output.contains("Ralph loop iteration 1/5: still failing"),
        "Gemini did not show the AfterAgent hook's message\n{report}"
    );
}

#[test]
fn copilot_runs_a_loop_with_a_check_to_completion() {
    let Some(copilot) = find_cli("copilot", "COPILOT_BIN") else {
        return;
    };
    let temp = TempDir::new("copilot-e2e");
    let project = prepare(&temp, "copilot");
    assert!(project.join(".github/hooks/ralph-hooks.json").is_file());
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let seen: Seen = Arc::default();
    let port = start_mock(seen.clone(), copilot_api);

    let mut command = clean_command(&copilot, &project);
    command
        .args(["-p", "Do the work of the loop."])
        .env("HOME", &home)
        .env("COPILOT_HOME", home.join(".copilot"))
        // No GitHub sign-in and no network: a custom provider on loopback.
        .env("COPILOT_OFFLINE", "true")
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        )
        .env("COPILOT_PROVIDER_WIRE_API", "responses")
        .env("COPILOT_MODEL", "gpt-5")
        .env("COPILOT_AUTO_UPDATE", "false")
        // Tools run without asking, and this folder (its hooks) is trusted.
        .env("COPILOT_ALLOW_ALL", "true");
    let (status, output, took) = run_agent(command);
    let requests = seen.lock().unwrap().clone();
    let report = assert_loop_completed(&project, &requests, status, &output, took);
    assert!(output.contains("touch done.txt"), "{report}");
}
