//! The dashboard in a real browser (issue 14): headless Chromium, driven
//! over the DevTools protocol by a small client written here (a WebSocket
//! to `--remote-debugging-port` on loopback), loads the page a monitor
//! serves and is checked the way a person would: the ActiveTaskCard's bar
//! and current step, a CLI change showing up live, the modal's "Complete"
//! button clicked with the mouse changing the task file, the keyboard, dark
//! mode. Screenshots go to `target/monitor-screenshots/` as test artefacts.
//!
//! Chromium missing: the test says why and skips, unless
//! `RALPH_HOOKS_REQUIRE_SERVERS=1` (CI, which installs it with
//! `.ci/install-chromium.sh`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::monitor::{Monitor, cli, seeded_project, state_dir};
use crate::util::{self, TempDir};

/// A headless Chromium, killed (with its profile removed) on drop.
pub struct Browser {
    child: Child,
    _profile: TempDir,
    port: u16,
}

impl Browser {
    pub fn start(chromium: &Path) -> Browser {
        let profile = TempDir::new("chromium-profile");
        let mut child = Command::new(chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
                "--lang=en-US",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(port);
                }
            }
        });
        // The port comes on stderr or in the profile's `DevToolsActivePort`
        // file, whichever is first; a loaded machine (a parallel test run)
        // can take tens of seconds to start a fresh profile.
        let active_port = profile.path().join("DevToolsActivePort");
        let waited = Instant::now();
        let port: u16 = loop {
            if let Ok(port) = rx.recv_timeout(Duration::from_millis(100)) {
                break port.parse().unwrap();
            }
            if let Some(port) = std::fs::read_to_string(&active_port)
                .ok()
                .and_then(|text| text.lines().next()?.trim().parse().ok())
            {
                break port;
            }
            if waited.elapsed() > Duration::from_secs(90) {
                let _ = child.kill();
                panic!("chromium did not open its DevTools port within 90 s");
            }
        };
        Browser {
            child,
            _profile: profile,
            port,
        }
    }

    /// The first page target's DevTools connection.
    pub fn page(&self) -> Page {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, body) = http_get(self.port, "/json/list");
            let targets: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let url = targets.as_array().and_then(|list| {
                list.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                    .map(str::to_string)
            });
            if let Some(url) = url {
                return Page::connect(&url);
            }
            assert!(Instant::now() < deadline, "no page target: {body}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // DevTools' server may keep the connection open: read by Content-Length.
    let mut reader = BufReader::new(stream);
    let mut status = 0;
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("http/") {
            status = line
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        } else if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// One page's DevTools session: commands answered by id, events skipped.
pub struct Page {
    socket: tungstenite::WebSocket<TcpStream>,
    next_id: u64,
    /// Console errors and uncaught exceptions the page reported.
    pub errors: Vec<String>,
    /// Events read while waiting for a reply, kept for [`Page::next_event`].
    pending: std::collections::VecDeque<Value>,
}

impl Page {
    fn connect(url: &str) -> Page {
        let address = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .unwrap();
        let stream = TcpStream::connect(address).unwrap();
        let (socket, _) = tungstenite::client(url, stream).expect("DevTools handshake");
        let mut page = Page {
            socket,
            next_id: 0,
            errors: Vec::new(),
            pending: Default::default(),
        };
        page.call("Page.enable", json!({}));
        page.call("Runtime.enable", json!({}));
        page
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.socket
            .get_mut()
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        loop {
            let text = match self.socket.read().expect("DevTools reply") {
                tungstenite::Message::Text(text) => text,
                _ => continue,
            };
            let reply: Value = serde_json::from_str(&text).unwrap();
            match reply["method"].as_str() {
                Some("Runtime.exceptionThrown") => self
                    .errors
                    .push(reply["params"]["exceptionDetails"].to_string()),
                Some("Runtime.consoleAPICalled") if reply["params"]["type"] == "error" => {
                    self.errors.push(reply["params"]["args"].to_string())
                }
                _ => {}
            }
            if reply.get("method").is_some() {
                if self.pending.len() >= 200 {
                    self.pending.pop_front();
                }
                self.pending.push_back(reply.clone());
            }
            if reply["id"] == id {
                assert!(
                    reply.get("error").is_none(),
                    "{method} failed: {}",
                    reply["error"]
                );
                return reply["result"].clone();
            }
        }
    }

    /// Sends a command without waiting for its reply (which
    /// [`Page::call`] then skips); its id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params});
        self.socket
            .send(tungstenite::Message::Text(message.to_string().into()))
            .unwrap();
        id
    }

    /// The next event named `method` (30 s at most), skipping others.
    pub fn next_event(&mut self, method: &str) -> Value {
        if let Some(index) = self.pending.iter().position(|e| e["method"] == method) {
            return self.pending.remove(index).unwrap()["params"].clone();
        }
        self.pending.clear();
        self.socket
            .get_mut()
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(Instant::now() < deadline, "no {method} within 30 s");
            let text = match self.socket.read().expect("DevTools event") {
                tungstenite::Message::Text(text) => text,
                _ => continue,
            };
            let event: Value = serde_json::from_str(&text).unwrap();
            if event["method"] == method {
                return event["params"].clone();
            }
        }
    }

    /// Evaluates `expression` in the page; its value (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(details) = result.get("exceptionDetails") {
            panic!("{expression} threw: {details}");
        }
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it gives `wanted` or `limit` passes; the
    /// time it took, or the last value seen.
    pub fn wait_for(
        &mut self,
        expression: &str,
        wanted: &Value,
        limit: Duration,
    ) -> Result<Duration, Value> {
        let started = Instant::now();
        loop {
            let value = self.eval(expression);
            if value == *wanted {
                return Ok(started.elapsed());
            }
            if started.elapsed() > limit {
                return Err(value);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let bytes = base64_decode(shot["data"].as_str().unwrap());
        assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A real mouse click in the middle of the element `selector` names.
    pub fn click(&mut self, selector: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = match rect.as_array() {
            Some(xy) => (xy[0].as_f64().unwrap(), xy[1].as_f64().unwrap()),
            None => panic!("nothing to click at {selector}"),
        };
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// One key press (`Tab`, `Enter`, `Escape`) through the input pipeline.
    fn press(&mut self, key: &str) {
        let (code, text) = match key {
            "Tab" => (9, None),
            "Enter" => (13, Some("\r")),
            "Escape" => (27, None),
            other => panic!("no key {other}"),
        };
        let mut down =
            json!({"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code});
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code}),
        );
    }
}

fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("monitor-screenshots")
}

/// Standard base64 (the screenshot's encoding).
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let digits: Vec<u32> = chunk
            .iter()
            .take_while(|c| **c != b'=')
            .map(|c| value(*c))
            .collect();
        let mut bits = 0u32;
        for (i, d) in digits.iter().enumerate() {
            bits |= d << (18 - 6 * i);
        }
        let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
        out.extend_from_slice(&bytes[..digits.len().saturating_sub(1)]);
    }
    out
}

pub fn chromium() -> Option<PathBuf> {
    if Path::new("/usr/bin/chromium").is_file() {
        return Some(PathBuf::from("/usr/bin/chromium"));
    }
    util::require_tool("chromium", "the monitor's browser test")
}

/// The ActiveTaskCard of the seed's task, as the page shows it.
const BAR_LABEL: &str = "document.querySelector('.active-card[data-task=\"task_steps_test\"] .bar-label')?.textContent ?? null";
const BAR_WIDTH: &str = "document.querySelector('.active-card[data-task=\"task_steps_test\"] .bar-fill')?.style.width ?? null";
const CURRENT_STEP: &str = "document.querySelector('.active-card[data-task=\"task_steps_test\"] .current-step')?.textContent ?? null";

#[test]
fn the_dashboard_in_a_real_browser() {
    let Some(chromium) = chromium() else {
        return;
    };
    let temp = seeded_project("mon-browser");
    let project = temp.path();
    let monitor = Monitor::start(project, &[]);
    let browser = Browser::start(&chromium);
    let mut page = browser.page();
    page.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
    );
    page.call("Page.navigate", json!({"url": monitor.url}));

    // First paint: the seed's task with 1 of 4 done and s4 skipped, so the
    // bar covers (done + skipped) / total = 50 %, labelled done/total.
    page.wait_for(BAR_LABEL, &json!("1/4"), Duration::from_secs(10))
        .unwrap_or_else(|seen| panic!("the progress bar never showed 1/4: {seen}"));
    assert_eq!(page.eval(BAR_WIDTH), json!("50%"));
    assert_eq!(
        page.eval(CURRENT_STEP),
        json!("(s2) Google OAuth strategy 추가")
    );
    // The token left the address bar (kept in the page's storage).
    assert_eq!(page.eval("location.hash"), json!(""));
    assert_eq!(
        page.eval("localStorage.getItem('ralph-monitor-token')"),
        json!(monitor.token)
    );
    // Kanban columns by status, the team strip with steps done/total.
    assert_eq!(
        page.eval("[...document.querySelectorAll('.kanban .column h3')].map(h => h.textContent)"),
        json!([
            "In progress (1)",
            "Blocked (1)",
            "Planned (1)",
            "Completed (1)",
            "Cancelled (0)"
        ])
    );
    assert_eq!(
        page.eval("document.querySelector('.team .team-steps').textContent"),
        json!("(1/4 steps)")
    );
    page.wait_for(
        "document.querySelector('#conn').textContent",
        &json!("live"),
        Duration::from_secs(5),
    )
    .unwrap_or_else(|seen| panic!("the WebSocket never connected: {seen}"));
    let first = page.screenshot("1-first-paint-light");

    // A step completed with the CLI shows up within 2 s, no reload.
    page.eval("window.__sameDocument = true");
    let changed = Instant::now();
    cli(project, &["task", "step", "complete", "s2"]);
    let took = page
        .wait_for(
            BAR_LABEL,
            &json!("2/4"),
            Duration::from_secs(2).saturating_sub(changed.elapsed()),
        )
        .unwrap_or_else(|seen| {
            panic!("the page did not show 2/4 within 2 s of the CLI change: {seen}")
        });
    eprintln!("browser: CLI step change on the page after {took:?}");
    assert_eq!(
        page.eval(CURRENT_STEP),
        json!("(s3) GitHub OAuth callback 구현")
    );
    assert_eq!(page.eval("window.__sameDocument"), json!(true));
    page.screenshot("2-after-cli-step");

    // A self-driving Stop (the real hook binary): its card in Events later.
    let stop = json!({
        "session_id": "5e55a0e1-0000-4000-8000-00000000b0b0",
        "transcript_path": project.join("transcript.jsonl"),
        "cwd": project,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "Stopping for now."
    });
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        stop.to_string().as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("\"block\""),
        "the Stop was not continued: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The modal's checklist, opened with the mouse.
    page.click(".active-card[data-task=\"task_steps_test\"]");
    page.wait_for(
        "document.querySelector('#modal').open",
        &json!(true),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("the modal did not open: {seen}"));
    assert_eq!(
        page.eval("[...document.querySelectorAll('#checklist li')].map(li => li.children[0].dataset.icon + ' ' + li.dataset.step + ' ' + li.dataset.status)"),
        json!(["check s1 done", "check s2 done", "play s3 in_progress", "skip s4 skipped"])
    );
    assert_eq!(
        page.eval("getComputedStyle(document.querySelector('#checklist li[data-step=\"s4\"] .text')).textDecorationLine"),
        json!("line-through")
    );
    page.screenshot("3-modal-checklist");
    // "Complete" on s3, clicked: the task file changes.
    page.click("#checklist li[data-step=\"s3\"] button[data-action=\"complete\"]");
    let file = state_dir(project).join("tasks/task_steps_test.md");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains("- [x] (s3) GitHub OAuth callback 구현") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the click did not change the task file:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    page.wait_for(
        "document.querySelector('#checklist li[data-step=\"s3\"]').dataset.status",
        &json!("done"),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("the modal did not show s3 done: {seen}"));
    page.screenshot("4-after-click-complete");

    // Keyboard: Escape closes the modal; Tab reaches a task card and Enter
    // opens it.
    page.press("Escape");
    page.wait_for(
        "document.querySelector('#modal').open",
        &json!(false),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("Escape did not close the modal: {seen}"));
    page.eval("document.activeElement && document.activeElement.blur()");
    let mut reached = false;
    for _ in 0..20 {
        page.press("Tab");
        if page.eval("document.activeElement?.dataset?.task ?? null") == json!("task_steps_test") {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached the task card");
    page.press("Enter");
    page.wait_for(
        "document.querySelector('#modal').open",
        &json!(true),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("Enter on the card did not open the modal: {seen}"));
    page.press("Escape");

    // Dark mode follows the system, and is readable (light text on dark).
    page.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    assert_eq!(
        page.eval("getComputedStyle(document.body).backgroundColor"),
        json!("rgb(11, 17, 32)")
    );
    assert_eq!(
        page.eval("getComputedStyle(document.body).color"),
        json!("rgb(229, 231, 235)")
    );
    page.screenshot("5-dark");
    // The Events view: the CLI's and the browser's step updates as cards.
    page.click("nav button[data-view=\"events\"]");
    page.wait_for(
        "document.querySelectorAll('#events .event[data-type=\"task_step_update\"]').length >= 2",
        &json!(true),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("no step cards in the Events view: {seen}"));
    assert_eq!(
        page.eval("[...document.querySelectorAll('#events .event.continuation')].map(e => e.children[0].dataset.icon + ' ' + e.children[1].textContent)"),
        json!(["loop Self-driving: kept working (#1)"])
    );
    page.screenshot("6-events-dark");

    // The Loop view, live: a loop started with the CLI appears with its
    // goal, iteration n/max and conditions.
    page.click("nav button[data-view=\"loops\"]");
    cli(
        project,
        &[
            "loop",
            "start",
            "ship the login",
            "--check",
            "true",
            "--max-iterations",
            "7",
        ],
    );
    page.wait_for(
        "document.querySelector('#loops .loop-box')?.innerText.includes('ship the login') ?? false",
        &json!(true),
        Duration::from_secs(2),
    )
    .unwrap_or_else(|seen| panic!("the Loop view did not show the new loop: {seen}"));
    let loop_text = page.eval("document.querySelector('#loops .loop-box').innerText");
    let loop_text = loop_text.as_str().unwrap();
    assert!(loop_text.contains("Iteration 0/7"), "{loop_text}");
    assert!(loop_text.contains("check true exits 0"), "{loop_text}");
    assert!(loop_text.contains("RUNNING"), "{loop_text}");
    page.screenshot("7-loop-dark");

    assert!(
        page.errors.is_empty(),
        "the page reported errors: {:?}",
        page.errors
    );
    eprintln!(
        "browser: screenshots in {}",
        first.parent().unwrap().display()
    );
}
