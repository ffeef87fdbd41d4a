//! Each view of the dashboard in headless Chromium, checked the way a new
//! user sees it, with a screenshot of each in `target/monitor-screenshots/`
//! (`views-*.png`):
//!
//! - the first paint has the data (the server puts it in the page): shown
//!   with every request of the page blocked; without it, the views say
//!   "Loading…" and that is replaced by the data, or by why it failed;
//! - with a loop running, the page opens on the Loop view, which names the
//!   failing conditions, the failing check's output and the problems
//!   (file:line, message), `code` shown as code, never as backticks;
//! - text from files is text: a problem message holding `<script>` shows
//!   as those characters and runs nothing;
//! - the Events view says what happened in words, not raw event names;
//! - no emoji anywhere in the page (a machine without an emoji font draws
//!   them as empty boxes): icons are inline SVG.
//!
//! The browser talks to the monitor on loopback only. Chromium missing: the
//! test says why and skips, unless `RALPH_HOOKS_REQUIRE_SERVERS=1`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::monitor::{Monitor, cli, state_dir};
use crate::monitor_browser::{Browser, Page, chromium};
use crate::util::{self, TempDir};

const SESSION: &str = "5e55a0e1-0000-4000-8000-00000000c1c1";
/// A message from a language server that holds markup: shown, never run.
const HOSTILE: &str =
    "<script>window.__injected = 1</script><img src=x onerror=\"window.__injected = 2\">";

const TASK: &str = "# Task: task_login

## Metadata
- **Status:** in_progress
- **Priority:** high
- **Created:** 2026-11-20T09:00:00.000Z

## Description
Make the login page redirect after sign-in

## Steps
- [x] (s1) Read the current login flow
- [>] (s2) Redirect to the page the user came from
- [ ] (s3) Cover it with a test

## Progress
- Task started

## Last Activity
2026-11-20T09:30:00.000Z";

/// A project with a task and a running loop whose last Stop failed: its
/// check (run for real by the Stop hook) and its project condition (the
/// record a project check leaves, written here: no language server needed).
fn project_with_a_failing_loop() -> TempDir {
    let temp = TempDir::new("mon-views");
    let project = temp.path();
    let state = state_dir(project);
    std::fs::create_dir_all(state.join("tasks")).unwrap();
    std::fs::write(state.join("tasks/task_login.md"), TASK).unwrap();
    std::fs::write(
        state.join("tasks/active.json"),
        r#"{"version":1,"task_id":"task_login"}"#,
    )
    .unwrap();
    cli(
        project,
        &[
            "loop",
            "start",
            "make the **login** tests pass",
            "--check",
            "echo 'FAILED tests/test_login.py::test_redirect - assert 302 == 200'; exit 1",
            "--max-iterations",
            "8",
        ],
    );
    let stop = json!({
        "session_id": SESSION,
        "transcript_path": project.join("transcript.jsonl"),
        "cwd": project,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "Done, I think."
    });
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        stop.to_string().as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("\"block\""),
        "the loop did not block the Stop: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The project condition's record, as a project check leaves it.
    let loop_file = state.join("loop.json");
    let mut state_json: Value =
        serde_json::from_str(&std::fs::read_to_string(&loop_file).unwrap()).unwrap();
    state_json["project"] = json!(true);
    let last = state_json["history"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    last["failed"]
        .as_array_mut()
        .unwrap()
        .push(json!("project"));
    last["conditions"] = json!({"project": {
        "files": {"src/app.py": {"errors": 2, "warnings": 1}},
        "problems": [
            {"file": "src/app.py", "line": 12, "column": 5, "severity": "error", "source": "pyright",
             "message": "\"login_url\" is not defined; did you mean `login_path`?"},
            {"file": "src/app.py", "line": 40, "column": 1, "severity": "error", "source": "pyright",
             "message": HOSTILE},
            {"file": "src/app.py", "line": 3, "column": 1, "severity": "warning", "source": "ruff",
             "code": "F401", "message": "`os` imported but unused"}
        ],
        "inconclusive": [], "unchecked": []
    }});
    std::fs::create_dir_all(state.join("receipts")).unwrap();
    std::fs::write(
        state.join("receipts/first.md"),
        "# Receipt\n\nchecks ran: 1\n",
    )
    .unwrap();
    state_json["receipt"] = json!(".claude/orchestrator/receipts/first.md");
    std::fs::write(&loop_file, state_json.to_string()).unwrap();
    temp
}

/// Opens `url` afresh and waits for the load event. (From the page
/// itself, the same address with `#token=…` would only move to the
/// fragment, not load again.)
fn open(page: &mut Page, url: &str) {
    page.call("Page.navigate", json!({"url": "about:blank"}));
    page.call("Page.navigate", json!({"url": url}));
    page.wait_for(
        "document.readyState",
        &json!("complete"),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|seen| panic!("the page did not load: {seen}"));
}

/// What every view must never show, whatever its data.
fn assert_clean(page: &mut Page, view: &str) {
    assert_eq!(
        page.eval(
            "/[\\p{Extended_Pictographic}\\u{FE0F}]/u.test(document.documentElement.outerHTML)"
        ),
        json!(false),
        "{view}: the page uses an emoji, drawn as an empty box without an emoji font"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.loading').length"),
        json!(0),
        "{view}: still loading"
    );
    assert_eq!(
        page.eval("window.__injected ?? null"),
        Value::Null,
        "{view}: markup from a file ran"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('main script, main img').length"),
        json!(0),
        "{view}: markup from a file became elements"
    );
}

fn visible_view(page: &mut Page) -> Value {
    page.eval("['tasks', 'events', 'loops'].filter(v => !document.querySelector('#view-' + v).classList.contains('hidden'))")
}

fn text_of(page: &mut Page, selector: &str) -> String {
    page.eval(&format!(
        "document.querySelector({selector:?})?.innerText ?? ''"
    ))
    .as_str()
    .unwrap_or_default()
    .to_string()
}

#[test]
fn the_page_carries_its_first_data_escaped() {
    let temp = project_with_a_failing_loop();
    let monitor = Monitor::start(temp.path(), &[]);
    let (status, html) = monitor.raw("GET", "/", &[], b"");
    assert_eq!(status, 200);
    let start = html.find("id=\"initial-data\">").expect("the initial data") + 18;
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["tasks"].as_object().unwrap().len(), 1, "{data}");
    let agent = data["agents"][0]["id"].as_str().unwrap();
    assert_eq!(data["tasks"][agent][0]["id"], "task_login");
    assert_eq!(data["loops"][agent]["status"], "RUNNING");
    let problems = &data["loops"][agent]["latest"]["problems"];
    assert_eq!(problems[1]["message"], HOSTILE, "read back as written");
    assert!(
        !html.contains("<script>window.__injected") && !html.contains("<img src=x"),
        "the problem's markup is in the page's HTML as markup"
    );
    // Without the data the views say they are loading.
    assert!(html.contains("class=\"loading\">Loading tasks…"), "{html}");
}

#[test]
fn each_view_in_a_real_browser() {
    let Some(chromium) = chromium() else {
        return;
    };
    let temp = project_with_a_failing_loop();
    let project = temp.path();
    let monitor = Monitor::start(project, &[]);
    let browser = Browser::start(&chromium);
    let mut page = browser.page();
    page.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
    );

    // 1. The first paint needs no request: with every one of the page's
    // requests blocked, the loop is there as soon as the page has loaded.
    page.call("Network.enable", json!({}));
    page.call(
        "Network.setBlockedURLs",
        json!({"urls": ["*/api/*", "*/ws"]}),
    );
    open(&mut page, &monitor.url);
    assert!(
        text_of(&mut page, "#loops").contains("make the login tests pass"),
        "the first paint lacks the loop: {}",
        text_of(&mut page, "main")
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.loading').length"),
        json!(0)
    );
    page.screenshot("views-0-first-paint-without-requests");
    page.call("Network.setBlockedURLs", json!({"urls": []}));

    // 2. A loop runs: the page opens on it, live.
    open(&mut page, &monitor.url);
    page.wait_for(
        "document.querySelector('#conn').textContent",
        &json!("live"),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|seen| panic!("the WebSocket never connected: {seen}"));
    assert_eq!(visible_view(&mut page), json!(["loops"]));
    assert_eq!(
        page.eval(
            "document.querySelector('nav button[data-view=\"loops\"]').getAttribute('aria-pressed')"
        ),
        json!("true")
    );
    let states = page.eval(
        "[...document.querySelectorAll('#loops .loop-box.running .conditions li')].map(li => [li.dataset.state, li.innerText.replace(/\\s+/g, ' ').trim()])",
    );
    assert_eq!(
        states,
        json!([
            [
                "failing",
                "check echo 'FAILED tests/test_login.py::test_redirect - assert 302 == 200'; exit 1 exits 0 failing"
            ],
            [
                "failing",
                "no errors in the project (language servers and ast-grep) failing"
            ],
            ["holds", "no language-server errors in touched files holds"]
        ]),
        "the conditions and which fail"
    );
    let loop_text = text_of(&mut page, "#loops .loop-box.running");
    for wanted in [
        "Iteration 1/8",
        "Last stop: iteration 1",
        "failed (exit 1)",
        "FAILED tests/test_login.py::test_redirect - assert 302 == 200",
        "2 error(s), 1 warning(s)",
        "src/app.py:12:5",
        "\"login_url\" is not defined; did you mean login_path?",
        "src/app.py:40:1",
        HOSTILE,
        "os imported but unused",
        "Receipt: .claude/orchestrator/receipts/first.md",
    ] {
        // Headings are upper-cased by the style sheet.
        assert!(
            loop_text.to_lowercase().contains(&wanted.to_lowercase()),
            "no {wanted:?} in the Loop view:\n{loop_text}"
        );
    }
    assert!(!loop_text.contains('`'), "raw backticks:\n{loop_text}");
    assert!(
        !loop_text.contains("**"),
        "raw Markdown stars:\n{loop_text}"
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#loops .running .problems-table code')].map(c => c.textContent)"),
        json!(["login_path", "os"])
    );
    assert_eq!(
        page.eval("document.querySelector('#loops .running .goal strong')?.textContent ?? null"),
        json!("login")
    );
    // The receipt's link serves the file, as text.
    let receipt = page.eval(
        "fetch(document.querySelector('#loops .receipt a').href).then(async r => [r.status, r.headers.get('content-type'), await r.text()])",
    );
    assert_eq!(
        receipt,
        json!([
            200,
            "text/plain; charset=utf-8",
            "# Receipt\n\nchecks ran: 1\n"
        ])
    );
    assert_clean(&mut page, "loop");
    page.screenshot("views-1-loop");

    // 3. Tasks.
    page.click("nav button[data-view=\"tasks\"]");
    assert_eq!(visible_view(&mut page), json!(["tasks"]));
    let tasks_text = text_of(&mut page, "#view-tasks");
    for wanted in [
        "Make the login page redirect after sign-in",
        "(s2) Redirect to the page the user came from",
        "In progress (1)",
        "loop RUNNING 1/8",
    ] {
        assert!(
            tasks_text.to_lowercase().contains(&wanted.to_lowercase()),
            "no {wanted:?} in Tasks:\n{tasks_text}"
        );
    }
    assert_clean(&mut page, "tasks");
    page.screenshot("views-2-tasks");

    // A step completed with the CLI: its event, in words.
    cli(project, &["task", "step", "complete", "s2"]);
    page.click("nav button[data-view=\"events\"]");
    page.wait_for(
        "document.querySelector('#events [data-event=\"step_completed\"]') !== null",
        &json!(true),
        Duration::from_secs(5),
    )
    .unwrap_or_else(|seen| panic!("the step's event never showed: {seen}"));

    // 4. Events: labels in words.
    let labels = page
        .eval("[...document.querySelectorAll('#events .event .label')].map(l => l.textContent)");
    let labels: Vec<&str> = labels
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in [
        "Loop started",
        "Loop iteration 1: not done yet",
        "Step done s2",
    ] {
        assert!(labels.contains(&wanted), "no {wanted:?} among {labels:?}");
    }
    for label in &labels {
        assert!(
            !label.contains('_'),
            "a raw event name in the Events view: {label:?} (all: {labels:?})"
        );
    }
    let iteration = text_of(&mut page, "#events [data-event=\"loop_iteration\"]");
    assert!(
        iteration.contains("still failing: check echo"),
        "the iteration says what failed: {iteration}"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#events .event > svg.icon').length === document.querySelectorAll('#events .event').length"),
        json!(true),
        "every event has a drawn icon"
    );
    assert_clean(&mut page, "events");
    page.screenshot("views-3-events");

    // 5. Dark, each view.
    page.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    page.click("nav button[data-view=\"loops\"]");
    page.screenshot("views-4-loop-dark");

    // 6. No loop running: it opens on Tasks; `?view=` picks a view.
    cli(project, &["loop", "cancel"]);
    open(&mut page, &monitor.url);
    assert_eq!(visible_view(&mut page), json!(["tasks"]));
    let events_url = monitor.url.replacen('#', "?view=events#", 1);
    open(&mut page, &events_url);
    assert_eq!(visible_view(&mut page), json!(["events"]));
    open(&mut page, &monitor.url.replacen('#', "?view=loops#", 1));
    let archived = text_of(&mut page, "#loops");
    assert!(archived.contains("CANCELLED"), "{archived}");
    assert_clean(&mut page, "loop, cancelled");

    assert!(
        page.errors.is_empty(),
        "the page reported errors: {:?}",
        page.errors
    );
}

/// The page served without its data (as a monitor that could not read it
/// would), through the DevTools `Fetch` domain.
fn open_without_initial_data(page: &mut Page, url: &str) {
    page.call(
        "Fetch.enable",
        json!({"patterns": [{"resourceType": "Document", "requestStage": "Response"}]}),
    );
    // A fresh load: the same address with `#token=…` would only move to
    // the fragment.
    page.call("Page.navigate", json!({"url": "about:blank"}));
    page.send("Page.navigate", json!({"url": url}));
    let paused = page.next_event("Fetch.requestPaused");
    let request = paused["requestId"].as_str().unwrap().to_string();
    let body = page.call("Fetch.getResponseBody", json!({"requestId": request}));
    let html = match body["base64Encoded"].as_bool() {
        Some(true) => String::from_utf8(crate::monitor_browser::base64_decode(
            body["body"].as_str().unwrap(),
        ))
        .unwrap(),
        _ => body["body"].as_str().unwrap().to_string(),
    };
    let start = html.find("id=\"initial-data\">").unwrap() + 18;
    let end = start + html[start..].find("</script>").unwrap();
    let stripped = format!("{}null{}", &html[..start], &html[end..]);
    page.call(
        "Fetch.fulfillRequest",
        json!({"requestId": request, "responseCode": 200,
               "responseHeaders": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
               "body": base64_encode(stripped.as_bytes())}),
    );
    page.call("Fetch.disable", json!({}));
    page.wait_for(
        "document.readyState",
        &json!("complete"),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|seen| panic!("the page did not load: {seen}"));
}

#[test]
fn without_its_first_data_the_page_says_loading_then_shows_the_data_or_why_not() {
    let Some(chromium) = chromium() else {
        return;
    };
    let temp = project_with_a_failing_loop();
    let monitor = Monitor::start(temp.path(), &[]);
    let browser = Browser::start(&chromium);
    let mut page = browser.page();

    // The requests answer: "Loading…" gives way to the loop.
    open_without_initial_data(&mut page, &monitor.url);
    page.wait_for(
        "document.querySelector('#loops .loop-box.running') !== null && document.querySelectorAll('.loading').length === 0",
        &json!(true),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|seen| panic!("the loading state stayed: {seen}"));
    assert_eq!(visible_view(&mut page), json!(["loops"]));
    assert_clean(&mut page, "loaded by requests");

    // They fail: the views say so instead of loading forever.
    page.call("Network.enable", json!({}));
    page.call(
        "Network.setBlockedURLs",
        json!({"urls": ["*/api/*", "*/ws"]}),
    );
    open_without_initial_data(&mut page, &monitor.url);
    page.wait_for(
        "[...document.querySelectorAll('.loading')].every(e => e.textContent.startsWith('Could not load the data'))",
        &json!(true),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|seen| panic!("the loading state did not say why it failed: {seen}"));
    let said = text_of(&mut page, "#view-tasks");
    assert!(said.contains("Could not load the data"), "{said}");
    page.screenshot("views-5-could-not-load");
}

fn base64_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let bits = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= n {
                out.push(DIGITS[((bits >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
