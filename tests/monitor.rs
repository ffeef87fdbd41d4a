//! `ralph-hooks monitor` (issue 14) as a real process: every endpoint and
//! its errors, the token and Host rules, writes through the API and the CLI
//! at once, live events on the WebSocket and SSE after CLI and hook changes,
//! a garbage task file, graceful shutdown.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// A running monitor, stopped with SIGTERM on drop.
pub struct Monitor {
    child: Option<Child>,
    pub port: u16,
    pub token: String,
    pub url: String,
}

impl Monitor {
    /// `ralph-hooks monitor --port 0` in `project` with `extra` arguments.
    pub fn start(project: &Path, extra: &[&str]) -> Monitor {
        Monitor::start_with(project, extra, &[])
    }

    pub fn start_with(project: &Path, extra: &[&str], env: &[(&str, &str)]) -> Monitor {
        let mut command = util::command("ralph-hooks", project);
        command
            .args(["monitor", "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Live events are stamped with the real clock.
        command.env_remove("RALPH_HOOKS_NOW");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn the monitor");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .expect("the monitor printed nothing")
            .expect("read the monitor's stdout");
        // Keep draining stdout so the monitor never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let url = first
            .strip_prefix("Monitor: ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        let (base, token) = url.split_once("#token=").expect("token in the fragment");
        let port: u16 = base
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        Monitor {
            child: Some(child),
            port,
            token: token.to_string(),
            url: url.clone(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends SIGTERM and waits; the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the monitor did not stop within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.raw("GET", path, &[], b"");
        (status, parse(&body))
    }

    pub fn post(&self, value: &Value) -> (u16, Value) {
        let auth = format!("Bearer {}", self.token);
        let body = value.to_string();
        let (status, text) = self.raw(
            "POST",
            "/api/tasks/update",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        );
        (status, parse(&text))
    }

    /// One HTTP/1.1 request; `Host` is `127.0.0.1:port` unless given.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for (key, value) in headers {
            if !value.is_empty() {
                request.push_str(&format!("{key}: {value}\r\n"));
            }
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(request.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let text = String::from_utf8_lossy(&response).into_owned();
        let status: u16 = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {text:?}"));
        let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
        (status, body.to_string())
    }

    pub fn websocket(&self) -> WsClient {
        WsClient::connect(self.port)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
    }
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string()))
}

/// A blocking WebSocket client on `/ws`.
pub struct WsClient {
    socket: tungstenite::WebSocket<TcpStream>,
}

impl WsClient {
    pub fn connect(port: u16) -> WsClient {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut socket, _) =
            tungstenite::client(format!("ws://127.0.0.1:{port}/ws"), stream).expect("ws handshake");
        let hello = read_message(&mut socket, Duration::from_secs(5)).expect("hello");
        assert_eq!(hello["type"], "hello", "{hello}");
        WsClient { socket }
    }

    /// The first message `matches` accepts within `limit`, with the time it took.
    pub fn wait_for(
        &mut self,
        limit: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Option<(Value, Duration)> {
        let started = Instant::now();
        while started.elapsed() < limit {
            let left = limit.saturating_sub(started.elapsed());
            let message = read_message(&mut self.socket, left)?;
            if matches(&message) {
                return Some((message, started.elapsed()));
            }
        }
        None
    }
}

fn read_message(socket: &mut tungstenite::WebSocket<TcpStream>, limit: Duration) -> Option<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        socket
            .get_mut()
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match socket.read() {
            Ok(tungstenite::Message::Text(text)) => return serde_json::from_str(&text).ok(),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

pub fn cli(project: &Path, args: &[&str]) -> String {
    let output = util::command("ralph-hooks", project)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ralph-hooks {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn state_dir(project: &Path) -> PathBuf {
    project.join(".claude").join("orchestrator")
}

/// The seed's §15.6 example, byte for byte.
const SEED_EXAMPLE: &str = "# Task: task_steps_test

## Metadata
- **Status:** in_progress
- **Priority:** high
- **Created:** 2026-02-13T12:00:00.000Z

## Description
OAuth 로그인 구현

## Steps
- [x] (s1) 기존 auth 구조 파악
- [>] (s2) Google OAuth strategy 추가
- [ ] (s3) GitHub OAuth callback 구현
- [-] (s4) 건너뛴 단계

## Progress
- Task started
- [s1] 기존 auth 구조 분석 완료

## Last Activity
2026-02-13T12:30:00.000Z";

const NO_STEPS: &str = "# Task: task_no_steps

## Metadata
- **Status:** completed
- **Priority:** low
- **Created:** 2026-02-12T09:00:00.000Z

## Description
An older task without steps

## Progress
- Task started
- Task completed

## Last Activity
2026-02-12T10:00:00.000Z";

const PLANNED: &str = "# Task: task_planned

## Metadata
- **Status:** pending
- **Priority:** medium
- **Created:** 2026-02-14T09:00:00.000Z

## Description
Written by a planner, not started

## Last Activity
2026-02-14T09:00:00.000Z";

const BLOCKED: &str = "# Task: task_blocked

## Metadata
- **Status:** blocked
- **Priority:** high
- **Created:** 2026-02-14T09:00:00.000Z

## Description
Waiting for credentials

## Progress
- Task started
- Blocked: waiting for the OAuth client secret

## Last Activity
2026-02-14T10:00:00.000Z";

/// A project whose state holds the seed's example and three more tasks.
pub fn seeded_project(label: &str) -> TempDir {
    let temp = TempDir::new(label);
    let tasks = state_dir(temp.path()).join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join("task_steps_test.md"), SEED_EXAMPLE).unwrap();
    std::fs::write(tasks.join("task_no_steps.md"), NO_STEPS).unwrap();
    std::fs::write(tasks.join("task_planned.md"), PLANNED).unwrap();
    std::fs::write(tasks.join("task_blocked.md"), BLOCKED).unwrap();
    std::fs::write(
        state_dir(temp.path()).join("tasks/active.json"),
        r#"{"version":1,"task_id":"task_steps_test"}"#,
    )
    .unwrap();
    temp
}

fn agent_of(project: &Path) -> String {
    project.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn the_seed_parse_example_gives_exactly_the_seed_steps() {
    let temp = seeded_project("mon-seed");
    let monitor = Monitor::start(temp.path(), &[]);
    let agent = agent_of(temp.path());
    let (status, task) = monitor.get(&format!("/api/agents/{agent}/tasks/task_steps_test"));
    assert_eq!(status, 200, "{task}");
    assert_eq!(
        task["steps"],
        json!([
            {"id": "s1", "content": "기존 auth 구조 파악", "status": "done", "order": 1},
            {"id": "s2", "content": "Google OAuth strategy 추가", "status": "in_progress", "order": 2},
            {"id": "s3", "content": "GitHub OAuth callback 구현", "status": "pending", "order": 3},
            {"id": "s4", "content": "건너뛴 단계", "status": "skipped", "order": 4},
        ])
    );
    assert_eq!(
        task["stepsProgress"],
        json!({"total": 4, "done": 1, "inProgress": 1, "pending": 1, "skipped": 1})
    );
    assert_eq!(task["id"], "task_steps_test");
    assert_eq!(task["status"], "in_progress");
    assert_eq!(task["priority"], "high");
    assert_eq!(task["description"], "OAuth 로그인 구현");
    assert_eq!(task["created"], "2026-02-13T12:00:00.000Z");
    assert_eq!(task["lastActivity"], "2026-02-13T12:30:00.000Z");
    assert_eq!(
        task["progress"],
        json!(["Task started", "[s1] 기존 auth 구조 분석 완료"])
    );
    // Without steps: both fields absent, not null.
    let (_, old) = monitor.get(&format!("/api/agents/{agent}/tasks/task_no_steps"));
    let object = old.as_object().unwrap();
    assert!(
        !object.contains_key("steps") && !object.contains_key("stepsProgress"),
        "{old}"
    );
}

#[test]
fn every_read_endpoint_and_its_errors() {
    let temp = seeded_project("mon-read");
    let project = temp.path();
    cli(
        project,
        &[
            "loop",
            "start",
            "make it pass",
            "--check",
            "true",
            "--max-iterations",
            "4",
        ],
    );
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);

    let (status, agents) = monitor.get("/api/agents");
    assert_eq!(status, 200);
    assert_eq!(agents[0]["id"], agent.as_str());
    assert_eq!(agents[0]["taskCount"], 4);

    let (_, tasks) = monitor.get(&format!("/api/agents/{agent}/tasks"));
    let ids: Vec<&str> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "task_blocked",
            "task_no_steps",
            "task_planned",
            "task_steps_test"
        ]
    );

    let (_, current) = monitor.get(&format!("/api/agents/{agent}/current"));
    assert_eq!(current["id"], "task_steps_test");
    assert_eq!(
        current["currentStep"],
        json!({"id": "s2", "content": "Google OAuth strategy 추가"})
    );

    let (_, blocked) = monitor.get(&format!("/api/agents/{agent}/blocked"));
    assert_eq!(blocked.as_array().unwrap().len(), 1);
    assert_eq!(blocked[0]["id"], "task_blocked");
    assert_eq!(
        blocked[0]["blockedReason"],
        "Blocked: waiting for the OAuth client secret"
    );

    let (_, history) = monitor.get(&format!("/api/agents/{agent}/history"));
    assert_eq!(history.as_array().unwrap().len(), 1);
    assert_eq!(history[0]["id"], "task_no_steps");

    let (_, plans) = monitor.get(&format!("/api/agents/{agent}/plans"));
    assert_eq!(plans.as_array().unwrap().len(), 1);
    assert_eq!(plans[0]["id"], "task_planned");

    let (_, team) = monitor.get("/api/team-state");
    assert_eq!(team[0]["agentId"], agent.as_str());
    assert_eq!(team[0]["currentTask"]["id"], "task_steps_test");
    assert_eq!(team[0]["steps"], json!({"done": 1, "total": 4}));
    assert_eq!(team[0]["loop"]["status"], "RUNNING");
    assert_eq!(team[0]["loop"]["maxIterations"], 4);

    let (_, current_loop) = monitor.get(&format!("/api/agents/{agent}/loop"));
    assert_eq!(current_loop["goal"], "make it pass");
    assert_eq!(
        current_loop["conditions"],
        json!([
            "check `true` exits 0",
            "no language-server errors in touched files"
        ])
    );
    assert_eq!(current_loop["history"], json!([]));
    cli(project, &["loop", "cancel"]);
    let (_, loops) = monitor.get(&format!("/api/agents/{agent}/loops"));
    assert_eq!(loops.as_array().unwrap().len(), 1, "{loops}");
    assert_eq!(loops[0]["status"], "CANCELLED");
    assert_eq!(loops[0]["completion_reason"], "cancelled");

    // Events: loop_started and loop_cancelled, newest last, paginated.
    let (_, events) = monitor.get("/api/events");
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["loop_started", "loop_cancelled"]);
    assert_eq!(events["events"][0]["agentId"], agent.as_str());
    let (_, page) = monitor.get("/api/events?limit=1");
    assert_eq!(page["events"].as_array().unwrap().len(), 1);
    assert_eq!(page["events"][0]["data"]["event"], "loop_cancelled");
    assert_eq!(page["more"], true);
    let (_, none) = monitor.get("/api/events?since=2999-01-01T00:00:00Z");
    assert_eq!(none["events"], json!([]));
    let (_, all) = monitor.get("/api/events?since=2000-01-01T00:00:00Z&limit=1");
    assert_eq!(all["events"][0]["data"]["event"], "loop_started");
    assert_eq!(all["more"], true);
    let (status, _) = monitor.get("/api/events?limit=lots");
    assert_eq!(status, 400);

    // Errors.
    for path in [
        "/api/agents/nobody/tasks".to_string(),
        "/api/agents/nobody/current".to_string(),
        "/api/agents/nobody/loop".to_string(),
        format!("/api/agents/{agent}/tasks/task_nope"),
        "/api/nothing".to_string(),
    ] {
        let (status, body) = monitor.get(&path);
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body["error"].is_string(), "{path}: {body}");
    }
    for bad in ["..", "..%2F..%2Fetc%2Fpasswd", "a%00b", ".hidden"] {
        let (status, body) = monitor.get(&format!("/api/agents/{agent}/tasks/{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // The page is served, self-contained.
    let (status, page) = monitor.raw("GET", "/", &[], b"");
    assert_eq!(status, 200);
    assert!(
        page.contains("ralph-hooks monitor") && !page.contains("https://"),
        "the page loads nothing from elsewhere"
    );
}

#[test]
fn update_endpoint_actions_and_errors() {
    let temp = seeded_project("mon-update");
    let project = temp.path();
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);
    let task = |extra: Value| {
        let mut body = json!({"agentId": agent, "taskId": "task_steps_test"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };

    // The seed's exact refusal.
    let (status, body) = monitor.post(&task(json!({})));
    assert_eq!(status, 400);
    assert_eq!(body, json!({"error": "progress or action required"}));

    // Token.
    let body = task(json!({"progress": "x"})).to_string();
    for auth in [
        "",
        "Bearer wrong",
        "Basic abc",
        &format!("bearer {}", monitor.token),
    ] {
        let (status, text) = monitor.raw(
            "POST",
            "/api/tasks/update",
            &[("Authorization", auth)],
            body.as_bytes(),
        );
        assert_eq!(status, 401, "{auth:?}: {text}");
    }
    // Malformed JSON, missing ids, unknown agent/task, ids that are no ids.
    let auth = format!("Bearer {}", monitor.token);
    let (status, _) = monitor.raw(
        "POST",
        "/api/tasks/update",
        &[("Authorization", &auth)],
        b"{not json",
    );
    assert_eq!(status, 400);
    let (status, body) = monitor.post(&json!({"agentId": agent}));
    assert_eq!(
        (status, body),
        (400, json!({"error": "taskId and agentId required"}))
    );
    let (status, _) =
        monitor.post(&json!({"agentId": "nobody", "taskId": "task_steps_test", "progress": "x"}));
    assert_eq!(status, 404);
    let (status, _) =
        monitor.post(&json!({"agentId": agent, "taskId": "task_nope", "progress": "x"}));
    assert_eq!(status, 404);
    for bad in ["..", "../x", "a/b", "a\u{0}b", "", "/etc/passwd"] {
        let (status, body) =
            monitor.post(&json!({"agentId": agent, "taskId": bad, "progress": "x"}));
        assert_eq!(status, 400, "{bad:?}: {body}");
    }
    let (status, _) = monitor.post(&task(json!({"action": "complete_step", "stepId": "../s1"})));
    assert_eq!(status, 400);
    let (status, _) = monitor.post(&task(json!({"action": "complete_step"})));
    assert_eq!(status, 400);
    let (status, _) = monitor.post(&task(json!({"action": "fly"})));
    assert_eq!(status, 400);
    let (status, body) = monitor.post(&task(json!({"action": "complete_step", "stepId": "s9"})));
    assert_eq!(status, 400, "{body}");

    // Every action, answered with the updated task, written to the file.
    let (status, body) = monitor.post(&task(json!({"action": "complete_step", "stepId": "s2"})));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["steps"][1]["status"], "done");
    assert_eq!(
        body["steps"][2]["status"], "in_progress",
        "the next step starts"
    );
    let (_, body) = monitor.post(&task(
        json!({"action": "add_step", "stepContent": "write the docs"}),
    ));
    assert_eq!(
        body["steps"][4],
        json!({"id": "s5", "content": "write the docs", "status": "pending", "order": 5})
    );
    let (_, body) = monitor.post(&task(json!({"action": "start_step", "stepId": "s5"})));
    assert_eq!(body["currentStep"]["id"], "s5");
    let (_, body) = monitor.post(&task(
        json!({"action": "skip_step", "stepId": "s3", "note": "not needed"}),
    ));
    assert_eq!(body["steps"][2]["status"], "skipped");
    let (_, body) = monitor.post(&task(
        json!({"action": "reorder_steps", "steps": ["s5", "s1", "s2", "s3", "s4"]}),
    ));
    let order: Vec<&str> = body["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["s5", "s1", "s2", "s3", "s4"]);
    let (_, body) = monitor.post(&task(json!({"progress": "checked from the browser"})));
    assert_eq!(
        body["progress"].as_array().unwrap().last().unwrap(),
        "checked from the browser"
    );
    let (status, _) = monitor.post(&task(json!({"action": "reorder_steps", "steps": ["s1"]})));
    assert_eq!(status, 400, "not a permutation");

    // The file on disk says the same, read back through the CLI.
    let text =
        std::fs::read_to_string(state_dir(project).join("tasks/task_steps_test.md")).unwrap();
    assert!(text.contains("- [>] (s5) write the docs"), "{text}");
    assert!(
        text.contains("- [-] (s3) GitHub OAuth callback 구현"),
        "{text}"
    );
    assert!(text.contains("checked from the browser"), "{text}");
    // …and events.jsonl has the step updates, as the CLI writes them.
    let log = std::fs::read_to_string(state_dir(project).join("events.jsonl")).unwrap();
    assert!(
        log.contains(r#""event":"step_completed","stepId":"s2""#),
        "{log}"
    );

    // The active task with open steps keeps the agent going: replacing
    // its steps is refused as the agent's CLI is (issue 31); once it is
    // blocked, the write goes through.
    let (status, body) = monitor.post(&task(
        json!({"action": "set_steps", "steps": ["one", "two"]}),
    ));
    assert_eq!(status, 403, "{body}");
    cli(project, &["task", "block", "--note", "waiting"]);
    let (status, body) = monitor.post(&task(
        json!({"action": "set_steps", "steps": ["one", "two"]}),
    ));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["stepsProgress"],
        json!({"total": 2, "done": 0, "inProgress": 1, "pending": 1, "skipped": 0})
    );
}

// See: issue 31, "What was seen" 7: with the token from monitor.json the
// agent replaced open task steps (`set_steps`) that its CLI is refused.
// The write API now applies the same policy while the work runs unattended.
#[test]
fn the_write_api_grants_no_more_than_the_agents_cli_while_unattended() {
    let temp = seeded_project("mon-unattended");
    let project = temp.path();
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);
    let task_file = state_dir(project).join("tasks/task_steps_test.md");
    let before = std::fs::read_to_string(&task_file).unwrap();
    let set = json!({"agentId": agent, "taskId": "task_steps_test",
                     "action": "set_steps", "steps": ["done"]});
    let (status, body) = monitor.post(&set);
    assert_eq!(status, 403, "{body}");
    let said = body["error"].as_str().unwrap();
    assert!(said.contains("would drop the open steps"), "{said}");
    assert_eq!(std::fs::read_to_string(&task_file).unwrap(), before);
    // What the CLI lets the agent do, the API does too.
    let (status, body) = monitor.post(&json!({"agentId": agent, "taskId": "task_steps_test",
        "action": "skip_step", "stepId": "s3", "note": "not needed"}));
    assert_eq!(status, 200, "{body}");
    // Another task than the active one is not under the policy.
    let (status, body) = monitor.post(&json!({"agentId": agent, "taskId": "task_planned",
        "action": "set_steps", "steps": ["a", "b"]}));
    assert_eq!(status, 200, "{body}");
    // The user paused the work (a stop phrase): attended again.
    std::fs::write(
        state_dir(project).join("tasks/task_steps_test.md"),
        before.replace("[-] (s3)", "[ ] (s3)"),
    )
    .unwrap();
    let prompt = crate::util::run_with_stdin(
        crate::util::command("ralph-user-prompt-submit", project),
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "", "prompt": "stop", "source": "user"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(prompt.status.code(), Some(0), "{prompt:?}");
    let (status, body) = monitor.post(&set);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn host_and_origin_rules() {
    let temp = seeded_project("mon-host");
    let monitor = Monitor::start(temp.path(), &[]);
    let port = monitor.port;
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".to_string(),
        // An IP literal cannot be rebound: how another machine reaches a
        // monitor bound to 0.0.0.0.
        format!("192.168.1.20:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = monitor.raw("GET", "/api/agents", &[("Host", &host)], b"");
        assert_eq!(status, 200, "{host}: {body}");
    }
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        String::new(),
    ] {
        let (status, body) = monitor.raw("GET", "/api/agents", &[("Host", &host)], b"");
        assert_eq!(status, 403, "{host}: {body}");
    }
    let (status, _) = monitor.raw("GET", "/", &[("Host", "rebound.example")], b"");
    assert_eq!(status, 403, "the page is refused too");
    let (status, _) = monitor.raw(
        "GET",
        "/api/agents",
        &[("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(status, 403);
    let own = format!("http://127.0.0.1:{port}");
    let (status, _) = monitor.raw("GET", "/api/agents", &[("Origin", &own)], b"");
    assert_eq!(status, 200);
    // A page elsewhere holding the token still cannot write.
    let auth = format!("Bearer {}", monitor.token);
    let body =
        json!({"agentId": agent_of(temp.path()), "taskId": "task_steps_test", "progress": "x"})
            .to_string();
    let (status, _) = monitor.raw(
        "POST",
        "/api/tasks/update",
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
        body.as_bytes(),
    );
    assert_eq!(status, 403);
}

#[test]
fn token_file_status_and_graceful_shutdown() {
    use std::os::unix::fs::PermissionsExt as _;
    let temp = seeded_project("mon-token");
    let project = temp.path();
    let mut monitor = Monitor::start(project, &[]);
    assert_eq!(monitor.token.len(), 32, "a generated 128-bit token");
    let file = state_dir(project).join("monitor.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["token"], monitor.token.as_str());
    let status = cli(project, &["status"]);
    let expected = format!(
        "Monitor: http://127.0.0.1:{}/ (pid {}",
        monitor.port,
        monitor.pid()
    );
    assert!(status.contains(&expected), "{status}");
    assert!(
        !status.contains(&monitor.token),
        "status never prints the token"
    );
    let json_status: Value = serde_json::from_str(&cli(project, &["status", "--json"])).unwrap();
    assert_eq!(
        json_status["monitor"]["url"],
        format!("http://127.0.0.1:{}/", monitor.port)
    );
    // A WebSocket client must not hold the shutdown up.
    let _client = monitor.websocket();
    let exit = monitor.stop();
    assert!(exit.success(), "{exit:?}");
    assert!(!file.exists(), "monitor.json is removed on shutdown");
    assert!(!cli(project, &["status"]).contains("Monitor:"));

    // A given token is used as it is.
    let monitor = Monitor::start(project, &["--token", "s3cret-token"]);
    assert_eq!(monitor.token, "s3cret-token");
}

#[test]
fn several_projects_are_several_agents() {
    let one = seeded_project("mon-multi");
    let two = TempDir::new("mon-multi");
    let three = TempDir::new("mon-multi");
    let a = format!("alpha={}", one.path().display());
    let b = two.path().display().to_string();
    // A second name for a folder already given is the same project: one
    // agent (see `a_repeated_project_is_watched_once`); a name already
    // taken by another folder gets a suffix.
    let again = format!("beta={}/.", two.path().display());
    let c = format!("alpha={}", three.path().display());
    let monitor = Monitor::start(
        one.path(),
        &[
            "--project",
            &a,
            "--project",
            &b,
            "--project",
            &again,
            "--project",
            &c,
        ],
    );
    let (_, agents) = monitor.get("/api/agents");
    let ids: Vec<&str> = agents
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha", agent_of(two.path()).as_str(), "alpha-2"]);
    let (_, tasks) = monitor.get("/api/agents/alpha/tasks");
    assert_eq!(tasks.as_array().unwrap().len(), 4);
    let (_, tasks) = monitor.get("/api/agents/alpha-2/tasks");
    assert_eq!(tasks, json!([]));
}

#[test]
fn api_and_cli_writes_at_once_lose_nothing() {
    const N: usize = 8;
    let temp = TempDir::new("mon-concurrent");
    let project = temp.path().to_path_buf();
    cli(&project, &["task", "start", "parallel work"]);
    cli(&project, &["task", "steps", "set", "first"]);
    let monitor = Monitor::start(&project, &[]);
    let agent = agent_of(&project);
    let task_id = {
        let (_, current) = monitor.get(&format!("/api/agents/{agent}/current"));
        current["id"].as_str().unwrap().to_string()
    };
    let port = monitor.port;
    let token = monitor.token.clone();
    let mut threads = Vec::new();
    for i in 0..N {
        let (agent, task_id, token) = (agent.clone(), task_id.clone(), token.clone());
        threads.push(std::thread::spawn(move || {
            let client = Monitor { child: None, port, token, url: String::new() };
            let (status, body) = client.post(&json!({"agentId": agent, "taskId": task_id, "action": "add_step", "stepContent": format!("from the api {i}")}));
            assert_eq!(status, 200, "{body}");
        }));
        let project = project.clone();
        threads.push(std::thread::spawn(move || {
            cli(
                &project,
                &["task", "step", "add", &format!("from the cli {i}")],
            );
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }
    let (_, task) = monitor.get(&format!("/api/agents/{agent}/tasks/{task_id}"));
    let contents: Vec<&str> = task["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["content"].as_str().unwrap())
        .collect();
    for i in 0..N {
        assert!(
            contents.contains(&format!("from the api {i}").as_str()),
            "{contents:?}"
        );
        assert!(
            contents.contains(&format!("from the cli {i}").as_str()),
            "{contents:?}"
        );
    }
    assert_eq!(contents.len(), 2 * N + 1);
}

fn live_step_event(env: &[(&str, &str)]) {
    let temp = TempDir::new("mon-ws");
    let project = temp.path();
    cli(project, &["task", "start", "live work"]);
    cli(project, &["task", "steps", "set", "one", "two", "three"]);
    let monitor = Monitor::start_with(project, &[], env);
    let mut client = monitor.websocket();
    let changed = Instant::now();
    cli(project, &["task", "step", "complete", "s1"]);
    let (event, _) = client
        .wait_for(
            Duration::from_secs(1).saturating_sub(changed.elapsed()),
            |e| e["type"] == "task_step_update" && e["data"]["event"] == "step_completed",
        )
        .expect("no task_step_update within 1 s of the CLI change");
    assert!(changed.elapsed() < Duration::from_secs(1));
    assert_eq!(event["agentId"], agent_of(project).as_str());
    assert_eq!(event["data"]["stepId"], "s1");
    assert_eq!(
        event["data"]["stepsProgress"],
        json!({"total": 3, "done": 1, "inProgress": 1, "pending": 1, "skipped": 0})
    );
    assert!(event["taskId"].as_str().unwrap().starts_with("task_"));
    assert!(event["timestamp"].is_string());
    // The next step started in the same write: its own event.
    let (started, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["data"]["event"] == "step_started"
        })
        .expect("step_started");
    assert_eq!(started["data"]["stepId"], "s2");
}

#[test]
fn websocket_sees_a_cli_step_change_within_a_second() {
    live_step_event(&[]);
}

#[test]
fn polling_fallback_also_delivers_within_a_second() {
    live_step_event(&[("RALPH_HOOKS_MONITOR_POLL", "1")]);
}

#[test]
fn websocket_sees_a_self_driving_stop_and_the_stop_guard() {
    let temp = TempDir::new("mon-continue");
    let project = temp.path();
    cli(project, &["task", "start", "keep going"]);
    cli(project, &["task", "steps", "set", "one", "two"]);
    let monitor = Monitor::start(project, &[]);
    let mut client = monitor.websocket();
    let stop = json!({
        "session_id": "5e55a0e1-0000-4000-8000-000000000001",
        "transcript_path": project.join("transcript.jsonl"),
        "cwd": project,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "I will stop here."
    });
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        stop.to_string().as_bytes(),
    );
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("\"block\""),
        "the Stop was continued"
    );
    let (event, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["type"] == "continuation_event"
        })
        .expect("no continuation_event within 1 s of the Stop");
    assert_eq!(event["data"]["event"], "self_driving_triggered");
    assert_eq!(event["data"]["consecutiveCount"], 1);
    assert_eq!(event["agentId"], agent_of(project).as_str());
    assert_eq!(event["sessionId"], "5e55a0e1-0000-4000-8000-000000000001");
    // `task complete` with open steps: the stop guard's event.
    let refused = util::command("ralph-hooks", project)
        .args(["task", "complete"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let (event, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["type"] == "continuation_event" && e["data"]["event"] == "stop_guard_blocked"
        })
        .expect("stop_guard_blocked");
    assert_eq!(event["data"]["remainingSteps"], 2);
}

#[test]
fn server_sent_events_carry_the_same_stream() {
    let temp = TempDir::new("mon-sse");
    let project = temp.path();
    cli(project, &["task", "start", "streamed"]);
    cli(project, &["task", "steps", "set", "one", "two"]);
    let monitor = Monitor::start(project, &[]);
    let mut stream = TcpStream::connect(("127.0.0.1", monitor.port)).unwrap();
    write!(
        stream,
        "GET /api/stream HTTP/1.1\r\nHost: localhost:{}\r\nAccept: text/event-stream\r\n\r\n",
        monitor.port
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    // Headers first; then the change.
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
    }
    cli(
        project,
        &["task", "step", "skip", "s1", "--note", "not needed"],
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut seen = String::new();
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).is_err() {
            break;
        }
        seen.push_str(&line);
        if line.contains("step_skipped") {
            assert!(line.contains("data: ") || line.contains("data:"), "{line}");
            return;
        }
    }
    panic!("no step_skipped on /api/stream: {seen:?}");
}

#[test]
fn a_garbage_task_file_is_reported_and_the_rest_served() {
    let temp = seeded_project("mon-garbage");
    let project = temp.path();
    let tasks = state_dir(project).join("tasks");
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);
    std::fs::write(tasks.join("task_binary.md"), [0xff, 0xfe, 0x00, 0x41, 0x80]).unwrap();
    std::fs::write(
        tasks.join("task_junk.md"),
        "}}}{{ not a task at all\n\u{1}\u{2}",
    )
    .unwrap();
    let (status, list) = monitor.get(&format!("/api/agents/{agent}/tasks"));
    assert_eq!(status, 200);
    assert_eq!(
        list.as_array().unwrap().len(),
        4,
        "the good tasks are still served"
    );
    // A file changed less than a second ago may be an editor's save
    // half-way: it is "not yet" until it has stayed the same that long.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    let problems = loop {
        let (_, agents) = monitor.get("/api/agents");
        let problems = agents[0]["problems"].to_string();
        if problems.contains("task_binary.md") && problems.contains("task_junk.md")
            || std::time::Instant::now() > until
        {
            break problems;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        problems.contains("task_binary.md") && problems.contains("task_junk.md"),
        "{problems}"
    );
    let (_, team) = monitor.get("/api/team-state");
    assert_eq!(team[0]["problems"].as_array().unwrap().len(), 2);
    // The monitor only watches: a damaged file is reported and left where
    // it is (it may be an editor's save half-way); a reader that may write
    // moves it aside once it stays damaged.
    assert!(tasks.join("task_binary.md").exists());
    let aside: Vec<PathBuf> = std::fs::read_dir(&tasks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".corrupt-"))
        .collect();
    assert!(aside.is_empty(), "{aside:?}");
    let (_, again) = monitor.get("/api/agents");
    assert_eq!(again[0]["problems"].as_array().unwrap().len(), 2, "{again}");
    assert!(
        again[0]["problems"].to_string().contains("not valid UTF-8"),
        "{again}"
    );
    // The live stream keeps working.
    let mut client = monitor.websocket();
    let (status, _) = monitor.post(&json!({"agentId": agent, "taskId": "task_steps_test", "action": "complete_step", "stepId": "s2"}));
    assert_eq!(status, 200);
    client
        .wait_for(Duration::from_secs(1), |e| {
            e["data"]["event"] == "step_completed"
        })
        .expect("events still flow");
}

#[test]
fn a_non_loopback_bind_warns() {
    let temp = TempDir::new("mon-bind");
    let mut command = util::command("ralph-hooks", temp.path());
    command
        .args(["monitor", "--port", "0", "--bind", "0.0.0.0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("reachable from other machines"), "{stderr}");
    let bad = util::command("ralph-hooks", temp.path())
        .args(["monitor", "--bind", "not-an-ip"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// Runs a command line, for the browser test's helpers.
pub fn run(command: &mut Command) -> std::process::Output {
    command.output().unwrap()
}

#[test]
fn websocket_sees_loop_iterations_and_the_end() {
    let temp = TempDir::new("mon-loop");
    let project = temp.path();
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);
    let mut client = monitor.websocket();
    cli(
        project,
        &[
            "loop",
            "start",
            "make done.txt",
            "--check",
            "test -f done.txt",
            "--max-iterations",
            "5",
        ],
    );
    let (started, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["type"] == "loop_event" && e["data"]["event"] == "loop_started"
        })
        .expect("loop_started within 1 s");
    assert_eq!(started["agentId"], agent.as_str());
    let stop = |active: bool| {
        let input = json!({
            "session_id": "5e55a0e1-0000-4000-8000-000000000002",
            "transcript_path": project.join("transcript.jsonl"),
            "cwd": project,
            "hook_event_name": "Stop",
            "stop_hook_active": active,
            "last_assistant_message": "done, I think"
        });
        let output = util::run_with_stdin(
            util::command("ralph-stop-loop-controller", project),
            input.to_string().as_bytes(),
        );
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // The check fails: the Stop is blocked, one iteration with its reason.
    assert!(stop(false).contains("\"block\""));
    let (iteration, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["type"] == "loop_event" && e["data"]["event"] == "loop_iteration"
        })
        .expect("loop_iteration within 1 s of the Stop");
    assert_eq!(iteration["data"]["iteration"], 1);
    assert!(
        iteration["data"]["failed"]
            .to_string()
            .contains("test -f done.txt"),
        "the reason names the failing check: {iteration}"
    );
    // The loop view's data: the iteration's reason is in the history.
    let (_, current) = monitor.get(&format!("/api/agents/{agent}/loop"));
    assert_eq!(current["iteration"], 1, "{current}");
    assert_eq!(current["history"][0]["decision"], "block", "{current}");
    // Fixed: the next Stop completes the loop.
    std::fs::write(project.join("done.txt"), "").unwrap();
    stop(true);
    let (completed, _) = client
        .wait_for(Duration::from_secs(1), |e| {
            e["type"] == "loop_event" && e["data"]["event"] == "loop_completed"
        })
        .expect("loop_completed within 1 s of the Stop");
    assert!(completed["data"]["reason"].is_string(), "{completed}");
    let (_, archived) = monitor.get(&format!("/api/agents/{agent}/loops"));
    assert_eq!(archived[0]["status"], "COMPLETED", "{archived}");
}

#[test]
fn a_list_read_right_after_a_cli_write_sees_it() {
    // The list is reused while nothing changed; a write from another
    // process must show in the very next read, before any event arrives.
    let temp = TempDir::new("mon-fresh");
    let project = temp.path();
    cli(project, &["task", "start", "fresh reads"]);
    let monitor = Monitor::start(project, &[]);
    let agent = agent_of(project);
    for n in 1..=15 {
        // Warm: two reads with nothing changed in between.
        monitor.get(&format!("/api/agents/{agent}/tasks"));
        std::thread::sleep(Duration::from_millis(if n % 3 == 0 { 150 } else { 5 }));
        monitor.get(&format!("/api/agents/{agent}/tasks"));
        cli(project, &["task", "step", "add", &format!("step {n}")]);
        let (_, tasks) = monitor.get(&format!("/api/agents/{agent}/tasks"));
        assert_eq!(
            tasks[0]["stepsProgress"]["total"], n,
            "read {n} right after the CLI write: {tasks}"
        );
    }
}
