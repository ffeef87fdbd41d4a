//! A fake language server for the diagnostics tests, built on lsp-server's
//! `Message::read/write` over stdin and stdout. Each test picks a script
//! with `--mode`:
//!
//! - `normal`: publishes diagnostics for every opened or changed document,
//!   echoing its version (and writing the URI back differently encoded, as
//!   pyright does);
//! - `empty-then-real`: publishes `[]` first and the real list 150 ms later,
//!   without versions (typescript-language-server);
//! - `pull-only`: advertises `diagnosticProvider` and never publishes;
//!   each pull's answer carries a `resultId` naming its diagnostics, and a
//!   pull whose `previousResultId` names the same is answered "unchanged"
//!   (and logged as `unchanged URI` with `--log-file`);
//! - `server-requests`: before publishing it asks `workspace/configuration`,
//!   `window/workDoneProgress/create` (with a string id) and
//!   `client/registerCapability`, and publishes only once all three are
//!   answered; the configured `fake.marker` setting is echoed in a message;
//! - `hang`: answers `initialize`, then never reads or writes again;
//! - `crash`: dies halfway through writing a message after `didOpen`;
//! - `garbage`: answers `initialize` with junk and keeps writing junk;
//! - `junk-then-normal`: like `normal`, with junk lines between messages;
//! - `flood`: after `didOpen`, an endless stream of log messages and
//!   ever-changing publishes for the document (it never settles);
//! - `flood-logs`: 20,000 log messages, then a normal publish;
//! - `slow-start`: waits `--delay-ms` before answering `initialize`;
//! - `silent-if-unchanged`: like `normal`, but a `didChange` that sends the
//!   text the document already has publishes nothing (as
//!   typescript-language-server did for an unchanged clean file).
//! - `hang-after-first`: like `normal` for the first document message, then
//!   never reads or writes again (a warm server that hangs).
//! - `silent-if-still-clean`: like `normal`, but a change of a document
//!   whose last publish was empty publishes nothing when it stays clean,
//!   and `didClose` publishes `[]` at once (typescript-language-server).
//! - `index-late`: answers `textDocument/references` at once, but until it
//!   has "indexed" the workspace (`--delay-ms` after the first `didOpen`)
//!   it knows only the open documents; then it publishes diagnostics for
//!   them and answers from every file under the root with the document's
//!   extension. This is how pyright behaves: its list of workspace files is
//!   filled in on a timer after start-up, and a references request that
//!   comes first finds only the open file.
//! - `index-progress`: `index-late` as clangd does it: the open documents'
//!   diagnostics are published at once, and the indexing runs behind a
//!   work-done progress titled "indexing" (begun at the first `didOpen`,
//!   ended when done), during which references come from the open
//!   documents only.
//! - `index-progress-late`: `index-progress`, but the progress begins only
//!   500 ms after the first `didOpen`, after the diagnostics are out (clangd
//!   on a loaded machine), and the indexing takes `--delay-ms` from there.
//!
//! - `never-publishes`: answers `initialize` and `shutdown`, reads every
//!   message, and never publishes anything (a server that started but
//!   does not answer for a file).
//!
//! - `stale-rename`: answers `textDocument/rename` the way pyright does
//!   for files it was not given: from what it read of them at its first
//!   rename (never read again), open documents winning; every whole-word
//!   occurrence of the word at the position is renamed. With
//!   `--script PATH` (a JSON array, one list of operations per rename
//!   request) it then changes the disk before it answers — `{"op":
//!   "insert", "file", "line", "text"}`, `{"op": "create", "file",
//!   "text"}`, `{"op": "delete", "file"}`, files relative to the root — and
//!   appends `applied N` to `--log-file`: the outside edit that lands
//!   between the positions being computed and the write. With
//!   `--ignore-open` it answers from its old view even for the documents it
//!   was sent (a server out of step with its client).
//!
//! - `slow-files`: like `normal`, but each document's publish takes
//!   `--delay-ms`, with a log message every 100 ms meanwhile (busy, not
//!   hung), so a batch of files takes their number times the delay.
//!
//! - `control-chars`: publishes one error whose message, source and code
//!   hold ESC sequences, BEL, CR, NUL, backspaces and U+202E.
//!
//! `--log-file PATH` appends `open <uri>` or `change <uri>` for every
//! document message, so a test can count how often a file was sent.
//!
//! Diagnostics come from the document text: a line containing `ERROR: msg`
//! gives an error with message `msg` at that line, `WARN:` a warning and
//! `HINT:` a hint. `--pid-file PATH` records the process id, and `--helper`
//! starts a `sleep` child in the same process group (as node servers start
//! helpers), so tests can check that the whole group is gone.

use std::io::{self, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use lsp_server::{Message, Notification, Request, RequestId, Response};
use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    EmptyThenReal,
    PullOnly,
    ServerRequests,
    Hang,
    Crash,
    Garbage,
    JunkThenNormal,
    Flood,
    FloodLogs,
    SlowStart,
    SilentIfUnchanged,
    HangAfterFirst,
    IndexLate,
    IndexProgress,
    IndexProgressLate,
    SilentIfStillClean,
    SlowFiles,
    NeverPublishes,
    StaleRename,
    ControlChars,
}

struct Options {
    mode: Mode,
    delay: Duration,
    log_file: Option<String>,
    script: Option<String>,
    ignore_open: bool,
}

fn main() {
    let options = parse_args();
    if matches!(
        options.mode,
        Mode::IndexLate | Mode::IndexProgress | Mode::IndexProgressLate
    ) {
        index_late::serve(&options);
        return;
    }
    if options.mode == Mode::StaleRename {
        stale_rename::serve(&options);
        return;
    }
    let stdin = io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut output = io::stdout().lock();
    let mut settings = Value::Null;
    loop {
        let message = match Message::read(&mut input) {
            Ok(Some(message)) => message,
            Ok(None) | Err(_) => return,
        };
        match message {
            Message::Request(request) => {
                if request.method == "initialize" {
                    on_initialize(&options, request, &mut output);
                } else if request.method == "shutdown" {
                    send(
                        &mut output,
                        Response::new_ok(request.id, Value::Null).into(),
                    );
                } else if request.method == "textDocument/diagnostic" {
                    let uri = request.params["textDocument"]["uri"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let text = documents::text(&uri);
                    let items = diagnostics_for(&text, &settings);
                    // A result id names these very diagnostics, as ty's
                    // does: a pull that names the same id is answered
                    // "unchanged" (and logged, so tests see it happen).
                    let result_id = format!("{:x}", fnv1a(items.to_string().as_bytes()));
                    let report = if request.params["previousResultId"].as_str()
                        == Some(result_id.as_str())
                    {
                        if let Some(log) = &options.log_file {
                            let _ = std::fs::OpenOptions::new()
                                .create(true)
                                .append(true)
                                .open(log)
                                .and_then(|mut file| writeln!(file, "unchanged {uri}"));
                        }
                        json!({"kind": "unchanged", "resultId": result_id})
                    } else {
                        json!({"kind": "full", "items": items, "resultId": result_id})
                    };
                    send(&mut output, Response::new_ok(request.id, report).into());
                } else {
                    send(
                        &mut output,
                        Response::new_err(request.id, -32601, "not handled by the fake".into())
                            .into(),
                    );
                }
            }
            Message::Notification(notification) => match notification.method.as_str() {
                "exit" => return,
                "textDocument/didClose" if options.mode == Mode::SilentIfStillClean => {
                    let uri = notification.params["textDocument"]["uri"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    if documents::published_clean(&uri).is_some() {
                        publish(&mut output, &uri, None, json!([]));
                    }
                    documents::set_published_clean(&uri, None);
                }
                "textDocument/didOpen" | "textDocument/didChange" => {
                    let params = &notification.params;
                    let uri = params["textDocument"]["uri"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let version = params["textDocument"]["version"].as_i64().unwrap_or(0);
                    let text = params["textDocument"]["text"]
                        .as_str()
                        .or_else(|| params["contentChanges"][0]["text"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    let unchanged = notification.method == "textDocument/didChange"
                        && documents::text(&uri) == text;
                    if let Some(log) = &options.log_file {
                        let kind = if notification.method == "textDocument/didOpen" {
                            "open"
                        } else {
                            "change"
                        };
                        let _ = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(log)
                            .and_then(|mut file| writeln!(file, "{kind} {uri}"));
                    }
                    documents::set(&uri, &text);
                    if options.mode == Mode::NeverPublishes {
                        continue;
                    }
                    if options.mode == Mode::SilentIfUnchanged && unchanged {
                        continue;
                    }
                    if options.mode == Mode::SilentIfStillClean {
                        let items = diagnostics_for(&text, &settings);
                        let still_clean = notification.method == "textDocument/didChange"
                            && documents::published_clean(&uri) == Some(true)
                            && items.as_array().is_some_and(Vec::is_empty);
                        if !still_clean {
                            documents::set_published_clean(
                                &uri,
                                Some(items.as_array().is_some_and(Vec::is_empty)),
                            );
                            publish(&mut output, &uri, None, items);
                        }
                        continue;
                    }
                    on_document(
                        &options,
                        &mut input,
                        &mut output,
                        &uri,
                        version,
                        &text,
                        &mut settings,
                    );
                }
                _ => {}
            },
            Message::Response(_) => {}
        }
    }
}

fn parse_args() -> Options {
    let mut mode = Mode::Normal;
    let mut delay = Duration::from_millis(0);
    let mut log_file = None;
    let mut script = None;
    let mut ignore_open = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mode" => {
                mode = match args.next().unwrap_or_default().as_str() {
                    "normal" => Mode::Normal,
                    "empty-then-real" => Mode::EmptyThenReal,
                    "pull-only" => Mode::PullOnly,
                    "server-requests" => Mode::ServerRequests,
                    "hang" => Mode::Hang,
                    "hang-after-first" => Mode::HangAfterFirst,
                    "crash" => Mode::Crash,
                    "garbage" => Mode::Garbage,
                    "junk-then-normal" => Mode::JunkThenNormal,
                    "flood" => Mode::Flood,
                    "flood-logs" => Mode::FloodLogs,
                    "slow-start" => Mode::SlowStart,
                    "silent-if-unchanged" => Mode::SilentIfUnchanged,
                    "index-late" => Mode::IndexLate,
                    "index-progress" => Mode::IndexProgress,
                    "index-progress-late" => Mode::IndexProgressLate,
                    "silent-if-still-clean" => Mode::SilentIfStillClean,
                    "slow-files" => Mode::SlowFiles,
                    "never-publishes" => Mode::NeverPublishes,
                    "stale-rename" => Mode::StaleRename,
                    "control-chars" => Mode::ControlChars,
                    other => {
                        eprintln!("fake_lsp_server: unknown mode {other:?}");
                        std::process::exit(2);
                    }
                }
            }
            "--delay-ms" => {
                delay =
                    Duration::from_millis(args.next().and_then(|v| v.parse().ok()).unwrap_or(0));
            }
            "--log-file" => log_file = args.next(),
            "--script" => script = args.next(),
            "--ignore-open" => ignore_open = true,
            "--pid-file" => {
                if let Some(path) = args.next() {
                    let _ = std::fs::write(path, std::process::id().to_string());
                }
            }
            "--helper" => {
                // Same process group as us; it keeps our stdout open, like a
                // node server's worker would.
                let _ = Command::new("sleep")
                    .arg("300")
                    .stdin(Stdio::null())
                    .spawn();
            }
            _ => {}
        }
    }
    Options {
        mode,
        delay,
        log_file,
        script,
        ignore_open,
    }
}

fn send(output: &mut impl Write, message: Message) {
    // A closed pipe means the client is gone; the next read ends us.
    let _ = message.write(output);
}

fn junk(output: &mut impl Write) {
    let _ = output.write_all(b"fake server log line on stdout\n");
    let _ = output.flush();
}

fn on_initialize(options: &Options, request: Request, output: &mut impl Write) {
    if options.mode == Mode::SlowStart {
        std::thread::sleep(options.delay);
    }
    if options.mode == Mode::Garbage {
        loop {
            let _ = output.write_all(
                b"Content-Type: nonsense\r\n\r\n{{{ not json at all\n\xff\xfe garbage\n",
            );
            let _ = output.flush();
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut capabilities = json!({
        "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": false}}
    });
    if options.mode == Mode::PullOnly {
        capabilities["diagnosticProvider"] =
            json!({"interFileDependencies": false, "workspaceDiagnostics": false});
    }
    if options.mode == Mode::JunkThenNormal {
        junk(output);
    }
    send(
        output,
        Response::new_ok(
            request.id,
            json!({"capabilities": capabilities, "serverInfo": {"name": "fake"}}),
        )
        .into(),
    );
    if options.mode == Mode::Hang {
        // Never read again: the client's writes fill the pipe and must not
        // block it.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

fn on_document(
    options: &Options,
    input: &mut impl io::BufRead,
    output: &mut impl Write,
    uri: &str,
    version: i64,
    text: &str,
    settings: &mut Value,
) {
    let published_uri = reencode(uri);
    match options.mode {
        Mode::Normal | Mode::SlowStart | Mode::SilentIfUnchanged => {
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
        }
        Mode::SlowFiles => {
            let mut waited = Duration::ZERO;
            while waited < options.delay {
                let step = Duration::from_millis(100).min(options.delay - waited);
                std::thread::sleep(step);
                waited += step;
                send(
                    output,
                    Notification::new(
                        "window/logMessage".into(),
                        json!({"type": 4, "message": "checking"}),
                    )
                    .into(),
                );
            }
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
        }
        Mode::JunkThenNormal => {
            junk(output);
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
            junk(output);
        }
        Mode::EmptyThenReal => {
            publish(output, uri, None, json!([]));
            std::thread::sleep(Duration::from_millis(150));
            publish(output, uri, None, diagnostics_for(text, settings));
        }
        Mode::HangAfterFirst => {
            static SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if SEEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
        }
        Mode::ControlChars => {
            publish(
                output,
                &published_uri,
                Some(version),
                control_chars_diagnostic(),
            );
        }
        Mode::PullOnly
        | Mode::Hang
        | Mode::Garbage
        | Mode::IndexLate
        | Mode::IndexProgress
        | Mode::IndexProgressLate
        | Mode::StaleRename
        | Mode::SilentIfStillClean => {}
        Mode::NeverPublishes => {}
        Mode::Crash => {
            let _ = output.write_all(b"Content-Length: 200\r\n\r\n{\"jsonrpc\":\"2.0\",\"meth");
            let _ = output.flush();
            std::process::exit(3);
        }
        Mode::ServerRequests => {
            let requests = [
                (
                    RequestId::from(7),
                    "workspace/configuration",
                    json!({"items": [{"section": "fake"}]}),
                ),
                (
                    RequestId::from("p1".to_string()),
                    "window/workDoneProgress/create",
                    json!({"token": "fake-progress"}),
                ),
                (
                    RequestId::from(8),
                    "client/registerCapability",
                    json!({"registrations": [{"id": "r1", "method": "workspace/didChangeWatchedFiles"}]}),
                ),
            ];
            for (id, method, params) in &requests {
                send(
                    output,
                    Request::new(id.clone(), method.to_string(), params.clone()).into(),
                );
            }
            let mut answered = 0;
            while answered < requests.len() {
                match Message::read(input) {
                    Ok(Some(Message::Response(response))) => {
                        if response.error.is_some() {
                            eprintln!("fake_lsp_server: a request was refused; publishing nothing");
                            return;
                        }
                        if response.id == RequestId::from(7) {
                            *settings = response.result.unwrap_or(Value::Null);
                        }
                        answered += 1;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => std::process::exit(0),
                }
            }
            progress(output, "begin");
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
            std::thread::sleep(Duration::from_millis(50));
            progress(output, "end");
        }
        Mode::Flood => {
            for round in 0u64.. {
                log(output, round);
                let items = json!([{"range": range(0, 0), "severity": 1, "message": format!("still thinking {round}")}]);
                publish(output, &published_uri, Some(version), items);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Mode::FloodLogs => {
            for round in 0..20_000 {
                log(output, round);
            }
            publish(
                output,
                &published_uri,
                Some(version),
                diagnostics_for(text, settings),
            );
        }
    }
}

fn log(output: &mut impl Write, round: u64) {
    send(
        output,
        Notification::new(
            "window/logMessage".into(),
            json!({"type": 4, "message": format!("busy {round}")}),
        )
        .into(),
    );
}

fn progress(output: &mut impl Write, kind: &str) {
    let mut value = json!({"kind": kind});
    if kind == "begin" {
        value["title"] = json!("Checking");
    }
    send(
        output,
        Notification::new(
            "$/progress".into(),
            json!({"token": "fake-progress", "value": value}),
        )
        .into(),
    );
}

fn publish(output: &mut impl Write, uri: &str, version: Option<i64>, diagnostics: Value) {
    let mut params = json!({"uri": uri, "diagnostics": diagnostics});
    if let Some(version) = version {
        params["version"] = json!(version);
    }
    send(
        output,
        Notification::new("textDocument/publishDiagnostics".into(), params).into(),
    );
}

/// Writes `+` and `@` bare, as some servers re-encode URIs: only a client
/// that compares decoded paths still matches them.
fn reencode(uri: &str) -> String {
    uri.replace("%2B", "+").replace("%40", "@")
}

fn range(line: u64, character: u64) -> Value {
    json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 1}})
}

/// An error whose message, source and code hold terminal escapes (a title
/// change, a screen clear), a carriage return, NUL, backspaces and a
/// right-to-left override: what a hostile or broken server could send.
fn control_chars_diagnostic() -> Value {
    json!([{
        "range": range(0, 0),
        "severity": 1,
        "source": "src\u{1b}[31m",
        "code": "C\u{7}D",
        "message": "EVIL\u{1b}]0;pwned\u{7}\u{1b}[2J\rOVERWRITE\u{202e}DESREVER\u{0}nul\u{8}\u{8}",
    }])
}

fn diagnostics_for(text: &str, settings: &Value) -> Value {
    let mut items = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for (tag, severity, code) in [("ERROR:", 1, "E1"), ("WARN:", 2, "W1"), ("HINT:", 4, "H1")] {
            if let Some(at) = line.find(tag) {
                let message = line[at + tag.len()..].trim();
                items.push(json!({
                    "range": range(index as u64, at as u64),
                    "severity": severity,
                    "source": "fake",
                    "code": code,
                    "message": message,
                }));
            }
        }
    }
    if let Some(marker) = settings
        .get(0)
        .and_then(|s| s.get("marker"))
        .and_then(Value::as_str)
    {
        items.push(json!({
            "range": range(0, 0), "severity": 2, "source": "fake", "code": "CFG",
            "message": format!("configuration received: {marker}"),
        }));
    }
    Value::Array(items)
}

/// Document texts by URI, for pull requests.
mod documents {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    fn store() -> &'static Mutex<HashMap<String, String>> {
        static STORE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
        STORE.get_or_init(Default::default)
    }

    pub fn set(uri: &str, text: &str) {
        store()
            .lock()
            .unwrap()
            .insert(uri.to_string(), text.to_string());
    }

    fn published() -> &'static Mutex<HashMap<String, bool>> {
        static PUBLISHED: OnceLock<Mutex<HashMap<String, bool>>> = OnceLock::new();
        PUBLISHED.get_or_init(Default::default)
    }

    /// Whether the last publish for `uri` was empty; `None` before any.
    pub fn published_clean(uri: &str) -> Option<bool> {
        published().lock().unwrap().get(uri).copied()
    }

    pub fn set_published_clean(uri: &str, clean: Option<bool>) {
        let mut published = published().lock().unwrap();
        match clean {
            Some(clean) => published.insert(uri.to_string(), clean),
            None => published.remove(uri),
        };
    }

    pub fn text(uri: &str) -> String {
        store()
            .lock()
            .unwrap()
            .get(uri)
            .cloned()
            .unwrap_or_default()
    }
}

/// The `index-late` server: a reader thread hands messages over, so the
/// "indexing" can finish on its own clock while requests are answered.
mod index_late {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::mpsc;
    use std::time::Instant;

    use lsp_server::{Message, Response};
    use serde_json::{Value, json};

    use super::{Mode, Options, diagnostics_for, publish, send};

    pub fn serve(options: &Options) {
        let (messages, inbox) = mpsc::channel();
        std::thread::spawn(move || {
            let mut input = std::io::BufReader::new(std::io::stdin().lock());
            while let Ok(Some(message)) = Message::read(&mut input) {
                if messages.send(message).is_err() {
                    return;
                }
            }
        });
        let mut output = std::io::stdout().lock();
        let mut root = PathBuf::new();
        let mut open: BTreeMap<String, String> = BTreeMap::new();
        let mut index_at: Option<Instant> = None;
        let mut indexed = false;
        let late = options.mode == Mode::IndexProgressLate;
        let progress = options.mode == Mode::IndexProgress || late;
        // When the progress begins (`index-progress-late`), until it has.
        let mut begin_at: Option<Instant> = None;
        let begin = json!({"token": "indexing",
            "value": {"kind": "begin", "title": "indexing"}});
        loop {
            if let Some(at) = begin_at
                && Instant::now() >= at
            {
                begin_at = None;
                send(
                    &mut output,
                    lsp_server::Notification::new("$/progress".into(), begin.clone()).into(),
                );
            }
            let wake = begin_at.or(index_at.filter(|_| !indexed));
            let message = match wake {
                Some(at) => {
                    match inbox.recv_timeout(at.saturating_duration_since(Instant::now())) {
                        Ok(message) => Some(message),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match inbox.recv() {
                    Ok(message) => Some(message),
                    Err(_) => return,
                },
            };
            if !indexed && begin_at.is_none() && index_at.is_some_and(|at| Instant::now() >= at) {
                indexed = true;
                if progress {
                    let end = json!({"token": "indexing", "value": {"kind": "end"}});
                    send(
                        &mut output,
                        lsp_server::Notification::new("$/progress".into(), end).into(),
                    );
                } else {
                    for (uri, text) in &open {
                        publish(&mut output, uri, None, diagnostics_for(text, &Value::Null));
                    }
                }
            }
            let Some(message) = message else { continue };
            match message {
                Message::Request(request) => {
                    let result = match request.method.as_str() {
                        "initialize" => {
                            root = request.params["rootUri"]
                                .as_str()
                                .map(path_of)
                                .unwrap_or_default();
                            json!({"capabilities": {
                                "textDocumentSync": {"openClose": true, "change": 1},
                                "referencesProvider": true,
                            }})
                        }
                        "textDocument/references" => {
                            references(&request.params, &open, indexed.then_some(&root))
                        }
                        "shutdown" => Value::Null,
                        _ => {
                            let refused = Response::new_err(
                                request.id,
                                -32601,
                                "not handled by the fake".into(),
                            );
                            send(&mut output, refused.into());
                            continue;
                        }
                    };
                    send(&mut output, Response::new_ok(request.id, result).into());
                }
                Message::Notification(notification) => {
                    let params = &notification.params;
                    match notification.method.as_str() {
                        "exit" => return,
                        "textDocument/didOpen" | "textDocument/didChange" => {
                            let uri = params["textDocument"]["uri"].as_str().unwrap_or_default();
                            let text = params["textDocument"]["text"]
                                .as_str()
                                .or_else(|| params["contentChanges"][0]["text"].as_str())
                                .unwrap_or_default();
                            open.insert(uri.to_string(), text.to_string());
                            if index_at.is_none() {
                                let now = Instant::now();
                                if late {
                                    let at = now + std::time::Duration::from_millis(500);
                                    begin_at = Some(at);
                                    index_at = Some(at + options.delay);
                                } else if progress {
                                    send(
                                        &mut output,
                                        lsp_server::Notification::new(
                                            "$/progress".into(),
                                            begin.clone(),
                                        )
                                        .into(),
                                    );
                                }
                                index_at.get_or_insert(now + options.delay);
                            }
                            if indexed || progress {
                                publish(
                                    &mut output,
                                    uri,
                                    None,
                                    diagnostics_for(text, &Value::Null),
                                );
                            }
                        }
                        _ => {}
                    }
                }
                Message::Response(_) => {}
            }
        }
    }

    /// Every whole-word occurrence of the word at the request's position,
    /// in the open documents, or (once indexed) in every file under `root`
    /// with the same extension (open texts win over the disk).
    fn references(
        params: &Value,
        open: &BTreeMap<String, String>,
        root: Option<&PathBuf>,
    ) -> Value {
        let uri = params["textDocument"]["uri"].as_str().unwrap_or_default();
        let line = params["position"]["line"].as_u64().unwrap_or(0) as usize;
        let character = params["position"]["character"].as_u64().unwrap_or(0) as usize;
        let Some(text) = open.get(uri) else {
            return Value::Null;
        };
        let word = word_at(text.lines().nth(line).unwrap_or_default(), character);
        if word.is_empty() {
            return Value::Null;
        }
        let mut texts = open.clone();
        if let Some(root) = root {
            let extension = path_of(uri).extension().map(|e| e.to_os_string());
            let mut files = Vec::new();
            walk(root, &mut files);
            for file in files {
                if file.extension().map(|e| e.to_os_string()) == extension {
                    let file_uri = format!("file://{}", file.display());
                    if !texts.contains_key(&file_uri)
                        && let Ok(text) = std::fs::read_to_string(&file)
                    {
                        texts.insert(file_uri, text);
                    }
                }
            }
        }
        let mut locations = Vec::new();
        for (file_uri, text) in &texts {
            for (index, line) in text.lines().enumerate() {
                for (at, _) in line.match_indices(&word) {
                    let before = line[..at].chars().next_back();
                    let after = line[at + word.len()..].chars().next();
                    if before.is_none_or(|c| !is_ident(c)) && after.is_none_or(|c| !is_ident(c)) {
                        locations.push(json!({
                            "uri": file_uri,
                            "range": {
                                "start": {"line": index, "character": at},
                                "end": {"line": index, "character": at + word.len()},
                            },
                        }));
                    }
                }
            }
        }
        Value::Array(locations)
    }

    fn is_ident(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }

    fn word_at(line: &str, character: usize) -> String {
        let chars: Vec<char> = line.chars().collect();
        if character >= chars.len() || !is_ident(chars[character]) {
            return String::new();
        }
        let start = (0..=character)
            .rev()
            .take_while(|&i| is_ident(chars[i]))
            .last()
            .unwrap_or(character);
        let end = (character..chars.len())
            .take_while(|&i| is_ident(chars[i]))
            .last()
            .unwrap_or(character);
        chars[start..=end].iter().collect()
    }

    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else {
                found.push(path);
            }
        }
    }

    /// The path of a `file://` URI (the tests' paths need no decoding
    /// beyond `%20`-style escapes).
    fn path_of(uri: &str) -> PathBuf {
        let raw = uri.strip_prefix("file://").unwrap_or(uri);
        let bytes = raw.as_bytes();
        let mut decoded = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && let Some(byte) = raw
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                decoded.push(byte);
                i += 3;
            } else {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
        PathBuf::from(String::from_utf8_lossy(&decoded).into_owned())
    }
}

/// The `stale-rename` server (see the module doc).
mod stale_rename {
    use std::collections::BTreeMap;
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    use lsp_server::{Message, Response};
    use serde_json::{Value, json};

    use super::{Options, publish, send};

    pub fn serve(options: &Options) {
        let mut input = std::io::BufReader::new(std::io::stdin().lock());
        let mut output = std::io::stdout().lock();
        let script: Vec<Vec<Value>> = options
            .script
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let mut root = PathBuf::new();
        let mut open: BTreeMap<PathBuf, String> = BTreeMap::new();
        // What it read of the workspace at its first rename: never again.
        let mut seen: Option<BTreeMap<PathBuf, String>> = None;
        let mut renames = 0;
        while let Ok(Some(message)) = Message::read(&mut input) {
            match message {
                Message::Request(request) => {
                    let result = match request.method.as_str() {
                        "initialize" => {
                            root = request.params["rootUri"]
                                .as_str()
                                .map(path_of)
                                .unwrap_or_default();
                            json!({"capabilities": {
                                "textDocumentSync": {"openClose": true, "change": 1},
                                "renameProvider": true,
                            }})
                        }
                        "textDocument/rename" => {
                            let params = &request.params;
                            let file =
                                path_of(params["textDocument"]["uri"].as_str().unwrap_or(""));
                            let seen = seen.get_or_insert_with(|| read_tree(&root, &file));
                            let mut texts = seen.clone();
                            if !options.ignore_open {
                                texts.extend(open.clone());
                            }
                            let answer = rename(params, &file, &texts);
                            for operation in script.get(renames).into_iter().flatten() {
                                apply(&root, operation);
                            }
                            if let Some(log) = &options.log_file {
                                let _ = std::fs::OpenOptions::new()
                                    .create(true)
                                    .append(true)
                                    .open(log)
                                    .and_then(|mut f| writeln!(f, "applied {renames}"));
                            }
                            renames += 1;
                            answer
                        }
                        "shutdown" => Value::Null,
                        _ => {
                            let refused = Response::new_err(
                                request.id,
                                -32601,
                                "not handled by the fake".into(),
                            );
                            send(&mut output, refused.into());
                            continue;
                        }
                    };
                    send(&mut output, Response::new_ok(request.id, result).into());
                }
                Message::Notification(notification) => {
                    let params = &notification.params;
                    let uri = params["textDocument"]["uri"].as_str().unwrap_or_default();
                    match notification.method.as_str() {
                        "exit" => return,
                        "textDocument/didOpen" | "textDocument/didChange" => {
                            let text = params["textDocument"]["text"]
                                .as_str()
                                .or_else(|| params["contentChanges"][0]["text"].as_str())
                                .unwrap_or_default();
                            open.insert(path_of(uri), text.to_string());
                            let version = params["textDocument"]["version"].as_i64();
                            publish(&mut output, uri, version, json!([]));
                        }
                        "textDocument/didClose" => {
                            open.remove(&path_of(uri));
                        }
                        _ => {}
                    }
                }
                Message::Response(_) => {}
            }
        }
    }

    /// Every file under `root` with `file`'s extension, canonical paths.
    fn read_tree(root: &Path, file: &Path) -> BTreeMap<PathBuf, String> {
        let mut found = Vec::new();
        walk(root, &mut found);
        found
            .into_iter()
            .filter(|path| path.extension() == file.extension())
            .filter_map(|path| Some((path.clone(), std::fs::read_to_string(&path).ok()?)))
            .collect()
    }

    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else {
                found.push(path.canonicalize().unwrap_or(path));
            }
        }
    }

    fn rename(params: &Value, file: &Path, texts: &BTreeMap<PathBuf, String>) -> Value {
        let line = params["position"]["line"].as_u64().unwrap_or(0) as usize;
        let character = params["position"]["character"].as_u64().unwrap_or(0) as usize;
        let new_name = params["newName"].as_str().unwrap_or_default();
        let Some(text) = texts.get(file) else {
            return Value::Null;
        };
        let word = word_at(text.split('\n').nth(line).unwrap_or_default(), character);
        if word.is_empty() {
            return Value::Null;
        }
        let mut changes = serde_json::Map::new();
        for (path, text) in texts {
            let mut edits = Vec::new();
            for (index, line) in text.split('\n').enumerate() {
                for (at, _) in line.match_indices(&word) {
                    let before = line[..at].chars().next_back();
                    let after = line[at + word.len()..].chars().next();
                    if before.is_none_or(|c| !is_ident(c)) && after.is_none_or(|c| !is_ident(c)) {
                        edits.push(json!({
                            "range": {
                                "start": {"line": index, "character": at},
                                "end": {"line": index, "character": at + word.len()},
                            },
                            "newText": new_name,
                        }));
                    }
                }
            }
            if !edits.is_empty() {
                changes.insert(format!("file://{}", path.display()), Value::Array(edits));
            }
        }
        json!({ "changes": changes })
    }

    /// One scripted outside edit (see the module doc).
    fn apply(root: &Path, operation: &Value) {
        let file = root.join(operation["file"].as_str().unwrap_or("missing"));
        let text = operation["text"].as_str().unwrap_or_default();
        match operation["op"].as_str() {
            Some("insert") => {
                let Ok(old) = std::fs::read_to_string(&file) else {
                    return;
                };
                let mut lines: Vec<&str> = old.split_inclusive('\n').collect();
                let at = (operation["line"].as_u64().unwrap_or(0) as usize).min(lines.len());
                lines.insert(at, text);
                let _ = std::fs::write(&file, lines.concat());
            }
            Some("create") => {
                let _ = std::fs::write(&file, text);
            }
            Some("delete") => {
                let _ = std::fs::remove_file(&file);
            }
            _ => {}
        }
    }

    fn is_ident(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }

    fn word_at(line: &str, character: usize) -> String {
        let chars: Vec<char> = line.chars().collect();
        if character >= chars.len() || !is_ident(chars[character]) {
            return String::new();
        }
        let start = (0..=character)
            .rev()
            .take_while(|&i| is_ident(chars[i]))
            .last()
            .unwrap_or(character);
        let end = (character..chars.len())
            .take_while(|&i| is_ident(chars[i]))
            .last()
            .unwrap_or(character);
        chars[start..=end].iter().collect()
    }

    /// The canonical path of a `file://` URI (the tests' paths need no
    /// decoding).
    fn path_of(uri: &str) -> PathBuf {
        let path = PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri));
        path.canonicalize().unwrap_or(path)
    }
}

/// FNV-1a, for result ids.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
