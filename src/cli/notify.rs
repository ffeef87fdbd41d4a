//! `ralph-hooks notify flush|test`: sends the webhook notifications the
//! hooks queued (see [`crate::ralph::notify`]).
//!
//! `flush` is what a hook starts, detached, after queueing a body in
//! `notify/outbox/`: it POSTs every queued body and removes each one that
//! was answered 2xx. One flush runs at a time (a lock); a body that fails
//! is tried [`ATTEMPTS`] times, then moved to `notify/failed/` with a
//! `notify_failed` event. `test` sends one test body now and says what came
//! back.
//!
//! `http://` URLs are posted here, over a plain socket; `https://` ones
//! through `curl` (the hooks link no TLS library), which must be on PATH.

use std::io::{Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::hook::ctx::Ctx;
use crate::ralph::notify::{NotifyConfig, OUTBOX_DIR};
use crate::state::FileLock;

/// How long one POST may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// Tries per body before it is given up.
const ATTEMPTS: u64 = 3;

/// How long one flush may run in all (a dead endpoint must not keep a
/// process around for long).
const FLUSH_DEADLINE: Duration = Duration::from_secs(90);

const FAILED_DIR: &str = "notify/failed";

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks notify test     # send a test body to notify.webhook now
  ralph-hooks notify flush    # send what the hooks queued";

#[derive(Debug, clap::Subcommand)]
pub enum NotifyCommand {
    /// Send what the hooks queued (what a hook starts, detached)
    Flush,
    /// Send one test body to the configured webhook now and say what came back
    Test,
}

pub fn run(ctx: &Ctx, command: &NotifyCommand) -> anyhow::Result<ExitCode> {
    match command {
        NotifyCommand::Flush => {
            flush(ctx)?;
            Ok(ExitCode::SUCCESS)
        }
        NotifyCommand::Test => test(ctx),
    }
}

/// Sends a test body to the configured webhook, now.
fn test(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let config = NotifyConfig::load(ctx);
    let Some(url) = config.webhook else {
        bail!(
            "no webhook configured: set \"notify\": {{\"webhook\": \"http://…\"}} in {}",
            crate::hook::config::Config::file_path(&ctx.project_root).display()
        );
    };
    let body = json!({"event": "test", "message": "ralph-hooks test notification",
                      "project": ctx.project_root.to_string_lossy(),
                      "at": ctx.now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)});
    let status = post_json(&url, &body)?;
    println!("POST {url}: HTTP {status}");
    Ok(if (200..300).contains(&status) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Sends what is queued; returns when the outbox is empty, every body left
/// failed, or the deadline passed.
fn flush(ctx: &Ctx) -> anyhow::Result<()> {
    let store = ctx.store();
    let started = Instant::now();
    loop {
        let lock_path = store.confined_path("notify/flush.lock")?;
        let Some(lock) = FileLock::try_acquire(&lock_path)? else {
            // Another flush runs; it looks at the outbox again before it ends.
            return Ok(());
        };
        let mut backoff = false;
        while started.elapsed() < FLUSH_DEADLINE {
            let names = queued(ctx)?;
            if names.is_empty() {
                break;
            }
            if backoff {
                std::thread::sleep(Duration::from_secs(2));
            }
            backoff = false;
            for name in names {
                if !send_one(ctx, &name)? {
                    backoff = true;
                }
            }
        }
        drop(lock);
        // A hook may have queued a body while we held the lock and left it
        // to us: look once more after letting go.
        if queued(ctx)?.is_empty() || started.elapsed() >= FLUSH_DEADLINE {
            return Ok(());
        }
    }
}

fn queued(ctx: &Ctx) -> anyhow::Result<Vec<String>> {
    Ok(ctx
        .store()
        .list_dir(OUTBOX_DIR)?
        .into_iter()
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect())
}

/// Sends one queued body. True when it is done with (sent, or given up).
fn send_one(ctx: &Ctx, name: &str) -> anyhow::Result<bool> {
    let store = ctx.store();
    let relative = format!("{OUTBOX_DIR}/{name}");
    let path = store.confined_path(&relative)?;
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(true); // another flush took it
    };
    let Ok(mut entry) = serde_json::from_str::<Value>(&text) else {
        let _ = std::fs::remove_file(&path);
        return Ok(true);
    };
    let url = entry["url"].as_str().unwrap_or_default().to_string();
    let result = post_json(&url, &entry["body"]);
    if let Ok(status) = result
        && (200..300).contains(&status)
    {
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        return Ok(true);
    }
    let error = match result {
        Ok(status) => format!("HTTP {status}"),
        Err(error) => format!("{error:#}"),
    };
    let attempts = entry["attempts"].as_u64().unwrap_or(0) + 1;
    if attempts >= ATTEMPTS {
        let failed = store.confined_path(&format!("{FAILED_DIR}/{name}"))?;
        if let Some(dir) = failed.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::rename(&path, &failed)
            .with_context(|| format!("cannot move {} aside", path.display()))?;
        let _ = ctx.log_event(
            "notify",
            ("notification", name),
            json!({"event": "notify_failed", "url": url, "attempts": attempts, "error": error}),
        );
        return Ok(true);
    }
    entry["attempts"] = json!(attempts);
    entry["lastError"] = json!(error);
    crate::state::write_atomic(&path, entry.to_string().as_bytes())?;
    Ok(false)
}

/// POSTs `body` as JSON; the HTTP status.
pub fn post_json(url: &str, body: &Value) -> anyhow::Result<u16> {
    let payload = body.to_string();
    if let Some(rest) = url.strip_prefix("http://") {
        return post_http(rest, &payload).with_context(|| format!("POST {url}"));
    }
    if url.starts_with("https://") {
        return post_with_curl(url, &payload);
    }
    bail!("the webhook {url:?} is neither http:// nor https://")
}

/// A plain HTTP/1.1 POST; `rest` is the URL after `http://`.
fn post_http(rest: &str, payload: &str) -> anyhow::Result<u16> {
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let address = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let socket = address
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {authority}"))?
        .next()
        .with_context(|| format!("{authority} resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&socket, POST_TIMEOUT)
        .with_context(|| format!("cannot connect to {authority}"))?;
    stream.set_read_timeout(Some(POST_TIMEOUT))?;
    stream.set_write_timeout(Some(POST_TIMEOUT))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: ralph-hooks/{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        env!("CARGO_PKG_VERSION"),
        payload.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // The status line is all we need.
    while !head.ends_with(b"\r\n") && head.len() < 1024 {
        if stream.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("not an HTTP answer: {:?}", line.trim()))
}

/// An HTTPS POST through `curl`.
fn post_with_curl(url: &str, payload: &str) -> anyhow::Result<u16> {
    let mut child = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ])
        .args(["--max-time", &POST_TIMEOUT.as_secs().to_string(), url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run curl, which sends https:// webhooks: install it")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(payload.as_bytes())?;
    }
    let output = child.wait_with_output().context("curl did not finish")?;
    let code = String::from_utf8_lossy(&output.stdout);
    code.trim()
        .parse::<u16>()
        .ok()
        .filter(|c| *c > 0)
        .with_context(|| {
            format!(
                "curl failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )
        })
}
