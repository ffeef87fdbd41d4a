//! The bytes between us and one language server: its process (own process
//! group, killed with its children on every exit path), a reader thread that
//! turns stdout into messages, a writer thread that owns stdin, and a thread
//! that drains stderr keeping its last lines for error messages.
//!
//! The caller never blocks on the server: writes go through a channel, so a
//! server that stopped reading its stdin (a full 64 KiB pipe) cannot stall
//! us, and reads wait with a deadline. The transport knows framing, not LSP
//! meaning; [`super::client`] gives the messages their meaning.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lsp_server::Message;

use crate::util::process::GroupChild;

/// What the reader thread saw on the server's stdout.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// Bytes that were not a valid LSP message; skipped, the stream goes on.
    Invalid(String),
    /// stdout was closed (the server exited) or can no longer be read.
    Closed(String),
}

/// The largest message body we accept. Diagnostics for a huge file fit well
/// under this; a bigger `Content-Length` is garbage, and allocating it could
/// abort the hook.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Header lines longer than this are garbage (a server logging to stdout).
const MAX_HEADER_LINE_BYTES: u64 = 8 * 1024;

/// Messages the reader may queue before it waits for us. A flooding server
/// then blocks on its own stdout instead of filling our memory.
const INCOMING_QUEUE: usize = 1024;

/// How many stderr lines we keep for error messages.
const STDERR_TAIL_LINES: usize = 20;

pub struct Transport {
    child: GroupChild,
    outgoing: Option<mpsc::Sender<Message>>,
    incoming: Receiver<Incoming>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The first error the server logged about reading its configuration
    /// (see [`configuration_error`]).
    config_error: Arc<Mutex<Option<String>>>,
    closed: bool,
}

/// The configuration files a server may fail to read.
const CONFIG_NAMES: &[&str] = &[
    "pyrefly.toml",
    "pyproject.toml",
    "ty.toml",
    "ruff.toml",
    ".ruff.toml",
    "pyrightconfig.json",
    "tsconfig.json",
];

/// Whether a stderr `line` is the server's error about one of its
/// configuration files: pyrefly (`ERROR /p/pyrefly.toml: TOML parse error
/// at line 1`) then answers every file with no diagnostics, as if clean
/// (attack AF-1), and ruff (`2026-… ERROR Failed to resolve settings for
/// /p/ruff.toml: …`) answers with its default rules (re-attack RE-10),
/// where their command lines refuse to check at all.
pub fn configuration_error(line: &str) -> bool {
    let line = line.trim_start();
    (line.starts_with("ERROR") || line.contains(" ERROR "))
        && CONFIG_NAMES
            .iter()
            .any(|name| line.contains(&format!("{name}:")))
}

impl Transport {
    /// Spawns `command` with all three streams piped, in its own process group.
    pub fn spawn(command: &mut Command) -> io::Result<Transport> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = GroupChild::spawn(command)?;
        let process = child.child_mut();
        let stdin = process.stdin.take().expect("stdin was piped");
        let stdout = process.stdout.take().expect("stdout was piped");
        let stderr = process.stderr.take().expect("stderr was piped");

        let (incoming_sender, incoming) = mpsc::sync_channel(INCOMING_QUEUE);
        let (outgoing, outgoing_receiver) = mpsc::channel::<Message>();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let pid = child.id();
        // The threads are detached: each ends when its pipe closes, which
        // killing the process group guarantees.
        std::thread::Builder::new()
            .name(format!("lsp-reader-{pid}"))
            .spawn(move || read_loop(stdout, &incoming_sender))?;
        std::thread::Builder::new()
            .name(format!("lsp-writer-{pid}"))
            .spawn(move || write_loop(stdin, &outgoing_receiver))?;
        let tail = Arc::clone(&stderr_tail);
        let config_error = Arc::new(Mutex::new(None));
        let config = Arc::clone(&config_error);
        std::thread::Builder::new()
            .name(format!("lsp-stderr-{pid}"))
            .spawn(move || drain_stderr(stderr, &tail, &config))?;
        Ok(Transport {
            child,
            outgoing: Some(outgoing),
            incoming,
            stderr_tail,
            config_error,
            closed: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Queues a message for the server; `false` when stdin is already closed.
    pub fn send(&self, message: Message) -> bool {
        match &self.outgoing {
            Some(outgoing) => outgoing.send(message).is_ok(),
            None => false,
        }
    }

    /// The next thing the server said, waiting until `deadline` at most;
    /// `None` on timeout. After [`Incoming::Closed`] it returns `Closed` again
    /// at once, so callers need no special case.
    pub fn recv_until(&mut self, deadline: Instant) -> Option<Incoming> {
        if self.closed {
            return Some(Incoming::Closed("the server's stdout is closed".into()));
        }
        let timeout = deadline.saturating_duration_since(Instant::now());
        let received = if timeout.is_zero() {
            self.incoming.try_recv().map_err(|error| match error {
                mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            })
        } else {
            self.incoming.recv_timeout(timeout)
        };
        match received {
            Ok(incoming) => {
                if matches!(incoming, Incoming::Closed(_)) {
                    self.closed = true;
                }
                Some(incoming)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                Some(Incoming::Closed("the server's stdout reader ended".into()))
            }
        }
    }

    /// Closes the server's stdin once the queued messages are written.
    pub fn close_stdin(&mut self) {
        self.outgoing = None;
    }

    /// The server's exit status, if it has exited (it is then reaped and its
    /// group killed). Its stdout may stay open after it died, held by a
    /// helper it started, so EOF alone does not tell.
    pub fn poll_exit(&mut self) -> Option<String> {
        match self.child.wait_timeout(Duration::ZERO) {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// Waits up to `timeout` for the server to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        matches!(self.child.wait_timeout(timeout), Ok(Some(_)))
    }

    /// Kills the whole process group and reaps the server.
    pub fn kill(&mut self) {
        self.outgoing = None;
        self.child.kill();
    }

    /// The server's error about reading its configuration, if it logged
    /// one since it started.
    pub fn config_error(&self) -> Option<String> {
        self.config_error
            .lock()
            .ok()
            .and_then(|error| error.clone())
    }

    /// The last lines the server wrote on stderr, joined.
    pub fn stderr_tail(&self) -> String {
        let lines = self
            .stderr_tail
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        lines.into_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        // GroupChild's own drop kills and reaps; closing stdin first lets the
        // writer thread end even if the kill is delayed.
        self.outgoing = None;
    }
}

fn read_loop(stdout: ChildStdout, incoming: &SyncSender<Incoming>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    loop {
        let item = match read_frame(&mut reader) {
            Ok(Frame::Message(message)) => Incoming::Message(message),
            Ok(Frame::Invalid(why)) => Incoming::Invalid(why),
            Ok(Frame::Eof) => Incoming::Closed("the server closed its stdout".into()),
            Err(error) => Incoming::Closed(format!("cannot read the server's stdout: {error}")),
        };
        let last = matches!(item, Incoming::Closed(_));
        if incoming.send(item).is_err() || last {
            return;
        }
    }
}

fn write_loop(mut stdin: ChildStdin, outgoing: &Receiver<Message>) {
    while let Ok(message) = outgoing.recv() {
        // A write error means the server is gone; the reader reports that.
        if message.write(&mut stdin).is_err() {
            return;
        }
    }
}

fn drain_stderr(
    stderr: ChildStderr,
    tail: &Mutex<VecDeque<String>>,
    config_error: &Mutex<Option<String>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader
            .by_ref()
            .take(MAX_HEADER_LINE_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                if text.is_empty() {
                    continue;
                }
                if configuration_error(&text)
                    && let Ok(mut error) = config_error.lock()
                    && error.is_none()
                {
                    *error = Some(text.clone());
                }
                if let Ok(mut lines) = tail.lock() {
                    if lines.len() == STDERR_TAIL_LINES {
                        lines.pop_front();
                    }
                    lines.push_back(text);
                }
            }
        }
    }
}

/// One read from the server's stdout.
#[derive(Debug)]
pub enum Frame {
    Message(Message),
    Invalid(String),
    Eof,
}

/// Reads one `Content-Length` framed message.
///
/// The headers are parsed here, with limits, so that junk on stdout (servers
/// that log there) is skipped line by line and an absurd length is refused
/// before anything is allocated; the body is then handed to
/// [`Message::read`], so message parsing is exactly lsp-server's.
pub fn read_frame(reader: &mut impl BufRead) -> io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .by_ref()
            .take(MAX_HEADER_LINE_BYTES)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(if saw_header {
                Frame::Invalid("stdout ended inside a message header".into())
            } else {
                Frame::Eof
            });
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            // A blank line between messages is noise, not a frame.
            continue;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Ok(Frame::Invalid(format!(
                "not an LSP header: {}",
                preview(text)
            )));
        };
        saw_header = true;
        if name.trim().eq_ignore_ascii_case("content-length") {
            match value.trim().parse::<usize>() {
                Ok(parsed) => length = Some(parsed),
                Err(_) => {
                    return Ok(Frame::Invalid(format!(
                        "bad Content-Length: {}",
                        preview(value)
                    )));
                }
            }
        }
    }
    let Some(length) = length else {
        return Ok(Frame::Invalid(
            "a message header without Content-Length".into(),
        ));
    };
    if length > MAX_BODY_BYTES {
        // The body cannot be skipped safely; the stream is lost.
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the server announced a {length}-byte message, over the {MAX_BODY_BYTES}-byte limit"
            ),
        ));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut framed = format!("Content-Length: {length}\r\n\r\n").into_bytes();
    framed.extend_from_slice(&body);
    match Message::read(&mut io::Cursor::new(framed)) {
        Ok(Some(message)) => Ok(Frame::Message(message)),
        Ok(None) => Ok(Frame::Invalid("an empty message".into())),
        // The body was consumed, so the next frame starts cleanly.
        Err(error) => Ok(Frame::Invalid(format!(
            "{error}: {}",
            preview(&String::from_utf8_lossy(&body))
        ))),
    }
}

fn preview(text: &str) -> String {
    const MAX: usize = 120;
    let text = text.trim();
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bytes: &[u8]) -> Vec<String> {
        let mut reader = io::Cursor::new(bytes.to_vec());
        let mut out = Vec::new();
        loop {
            match read_frame(&mut reader) {
                Ok(Frame::Eof) => return out,
                Ok(Frame::Message(Message::Notification(n))) => {
                    out.push(format!("note {}", n.method))
                }
                Ok(Frame::Message(other)) => out.push(format!("msg {other:?}")),
                Ok(Frame::Invalid(why)) => out.push(format!("invalid {why}")),
                Err(error) => {
                    out.push(format!("error {error}"));
                    return out;
                }
            }
        }
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn skips_junk_lines_between_messages() {
        let note = r#"{"jsonrpc":"2.0","method":"a"}"#;
        let input = format!(
            "hello from a server that logs to stdout\n{}\r\n{}",
            framed(note),
            framed(note)
        );
        assert_eq!(
            frames(input.as_bytes()),
            vec![
                "invalid not an LSP header: hello from a server that logs to stdout",
                "note a",
                "note a"
            ]
        );
    }

    #[test]
    fn tolerates_missing_space_and_extra_headers() {
        let body = r#"{"jsonrpc":"2.0","method":"b"}"#;
        let input = format!(
            "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length:{}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(frames(input.as_bytes()), vec!["note b"]);
    }

    #[test]
    fn bad_body_is_skipped_and_the_stream_goes_on() {
        let input = format!(
            "{}{}",
            framed("{not json}"),
            framed(r#"{"jsonrpc":"2.0","method":"c"}"#)
        );
        let got = frames(input.as_bytes());
        assert!(
            got[0].starts_with("invalid malformed LSP payload"),
            "{got:?}"
        );
        assert_eq!(got[1], "note c");
    }

    #[test]
    fn huge_length_is_refused_without_allocating() {
        let got = frames(b"Content-Length: 99999999999999\r\n\r\n{}");
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("over the"), "{got:?}");
    }

    #[test]
    fn binary_junk_is_invalid_not_fatal() {
        let mut input = vec![0xff, 0xfe, 0x00, b'\n'];
        input.extend_from_slice(framed(r#"{"jsonrpc":"2.0","method":"d"}"#).as_bytes());
        let got = frames(&input);
        assert!(got[0].starts_with("invalid"), "{got:?}");
        assert_eq!(got[1], "note d");
    }

    #[test]
    fn a_configuration_error_is_told_from_other_lines() {
        assert!(configuration_error(
            "ERROR /p/pyrefly.toml: TOML parse error at line 1, column 15"
        ));
        assert!(configuration_error(
            "2026-11-29 06:12:26.898945952 ERROR Failed to resolve settings for /p/ruff.toml: Failed to load configuration"
        ));
        assert!(!configuration_error(
            " INFO Populating all files in the config (FailedParse(\"/p/pyrefly.toml\"))."
        ));
        assert!(!configuration_error("ERROR could not open main.py: denied"));
        assert!(!configuration_error(
            "WARN /p/pyproject.toml: no [tool.ruff] section"
        ));
    }
}
