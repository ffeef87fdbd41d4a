//! Telling a person who walked away how the loop ended, or why it stopped
//! moving: on COMPLETED, FAILED (any reason), a budget at 80 %, a turn the
//! block cap ended, and a turn an API error or usage limit ended.
//!
//! Two channels, both from the `notify` section of
//! `.claude/ralph-hooks.json`:
//! - a desktop notification, as the `terminalSequence` of the hook output
//!   when the event has one (OSC 9 and/or OSC 777, which Claude Code's
//!   allow-list passes to the terminal); `"desktop": false` turns it off;
//! - a webhook (`"webhook": "http://…"`): a JSON body with the loop's id,
//!   goal, status, reason and spend, for every one of these events,
//!   StopFailure's included. The hook only queues it (a file under
//!   `notify/outbox/`) and starts `ralph-hooks notify flush` detached: the
//!   POST never delays a hook, and a failed one is retried by the next
//!   flush.

use std::process::Command;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::hook::ctx::Ctx;
use crate::ralph::budget;
use crate::ralph::loop_state::LoopState;

/// Queued webhook bodies, one file each.
pub const OUTBOX_DIR: &str = "notify/outbox";

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Completed,
    Failed,
    BudgetWarning,
    Capped,
    UsageLimit,
    ApiFailure,
}

impl Event {
    /// The `event` of the webhook body.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Completed => "completed",
            Event::Failed => "failed",
            Event::BudgetWarning => "budget_warning",
            Event::Capped => "capped",
            Event::UsageLimit => "usage_limit",
            Event::ApiFailure => "api_failure",
        }
    }

    fn headline(self, state: &LoopState) -> String {
        match self {
            Event::Completed => "Ralph loop COMPLETED".into(),
            Event::Failed => format!(
                "Ralph loop FAILED ({})",
                state.completion_reason.as_deref().unwrap_or("failed")
            ),
            Event::BudgetWarning => "Ralph loop: 80 % of a budget used".into(),
            Event::Capped => "Ralph loop: a turn ended at Claude Code's block cap".into(),
            Event::UsageLimit => "Ralph loop paused: usage limit".into(),
            Event::ApiFailure => "Ralph loop: a turn ended on an API error".into(),
        }
    }
}

/// Which escape sequence carries the desktop notification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sequence {
    /// `ESC ] 9 ; body BEL` (iTerm2, WezTerm, Ghostty, Windows Terminal, …).
    #[default]
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (rxvt-unicode, foot, Konsole, Ghostty, …).
    Osc777,
    /// Both (a terminal that knows both shows two).
    Both,
}

/// The `notify` section.
#[derive(Debug, Clone, Deserialize)]
pub struct NotifyConfig {
    #[serde(default = "yes")]
    pub desktop: bool,
    #[serde(default)]
    pub sequence: Sequence,
    /// Where to POST the JSON body; none by default.
    #[serde(default)]
    pub webhook: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for NotifyConfig {
    fn default() -> NotifyConfig {
        NotifyConfig {
            desktop: true,
            sequence: Sequence::default(),
            webhook: None,
        }
    }
}

impl NotifyConfig {
    /// The section from the project config; a broken one is reported and
    /// replaced by the defaults.
    pub fn load(ctx: &Ctx) -> NotifyConfig {
        ctx.config().section("notify").unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: using the default notifications: {error:#}");
            NotifyConfig::default()
        })
    }
}

/// Where a notification can be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The event has a hook output that reaches the terminal: the desktop
    /// notification rides on it, the webhook is queued.
    OutputAndWebhook,
    /// No output reaches a person now (StopFailure; a prompt the user is
    /// typing anyway): the webhook only.
    WebhookOnly,
}

/// Sends one notification: queues the webhook when one is configured and
/// returns the terminal sequence for the hook's output (when the channel
/// has one and desktop notifications are on). Never fails: a notification
/// that cannot be sent is reported on stderr.
pub fn notify(
    ctx: &Ctx,
    event: Event,
    state: &LoopState,
    message: &str,
    channel: Channel,
) -> Option<String> {
    let config = NotifyConfig::load(ctx);
    if let Some(url) = &config.webhook {
        let body = webhook_body(event, state, message, ctx.now());
        if let Err(error) = queue(ctx, url, &body) {
            eprintln!("ralph-hooks: warning: cannot queue the webhook notification: {error:#}");
        }
    }
    if channel == Channel::WebhookOnly || !config.desktop {
        return None;
    }
    Some(terminal_sequence(
        config.sequence,
        "ralph-hooks",
        &format!("{} — {}", event.headline(state), state.goal),
    ))
}

/// The desktop notification as escape sequences. Control characters are
/// dropped (a BEL or ESC in the goal would end the sequence early), the
/// body is kept short, and it never begins with a digit (Claude Code reads
/// `OSC 9 ; <digit>` as a progress report and drops it).
pub fn terminal_sequence(sequence: Sequence, title: &str, body: &str) -> String {
    let clean = |text: &str, limit: usize| -> String {
        let text: String = text
            .chars()
            .filter(|c| !c.is_control())
            .take(limit)
            .collect();
        text.trim().to_string()
    };
    let mut body = clean(body, 180);
    if body.starts_with(|c: char| c.is_ascii_digit()) {
        body.insert_str(0, "ralph: ");
    }
    let title = clean(title, 60).replace(';', ",");
    let osc9 = format!("\u{1b}]9;{body}\u{7}");
    let osc777 = format!("\u{1b}]777;notify;{title};{body}\u{7}");
    match sequence {
        Sequence::Osc9 => osc9,
        Sequence::Osc777 => osc777,
        Sequence::Both => osc9 + &osc777,
    }
}

/// The webhook's JSON body.
pub fn webhook_body(event: Event, state: &LoopState, message: &str, now: DateTime<Utc>) -> Value {
    let mut body = json!({
        "event": event.as_str(),
        "loopId": state.id,
        "goal": state.goal,
        "status": state.status.as_str(),
        "reason": state.completion_reason,
        "detail": state.completion_detail,
        "message": message,
        "iteration": state.iteration,
        "maxIterations": state.max_iterations,
        "project": state.project_root,
        "sessionId": state.session_id,
        "spend": {
            "tokens": state.spend.tokens,
            "totalTokens": state.spend.tokens.total(),
            "costUsd": state.spend.cost_usd,
            "costIsEstimate": true,
            "activeSecs": state.active_secs(now),
            "summary": budget::summary(&state.spend, state.active_secs(now)),
        },
        "at": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    if !state.budget.is_empty() {
        body["budget"] = json!(state.budget);
    }
    if let Some(at) = state.resets_at {
        body["resetsAt"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    body
}

/// Writes the body to the outbox and starts a flush in the background.
fn queue(ctx: &Ctx, url: &str, body: &Value) -> anyhow::Result<()> {
    static SEQUENCE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(
        "{OUTBOX_DIR}/{}-{}-{n}.json",
        Utc::now().format("%Y%m%dT%H%M%S%.6fZ"),
        std::process::id()
    );
    let path = ctx.store().confined_path(&name)?;
    let entry = json!({"url": url, "body": body, "attempts": 0});
    crate::state::write_atomic(&path, entry.to_string().as_bytes())?;
    let cli = crate::util::process::cli_binary()
        .ok_or_else(|| anyhow::anyhow!("no ralph-hooks binary next to this one or on PATH"))?;
    let mut command = Command::new(&cli);
    command
        .arg("--project")
        .arg(&ctx.project_root)
        .args(["notify", "flush"])
        .env("RALPH_HOOKS_STATE_DIR", &ctx.state_root)
        .current_dir(&ctx.project_root);
    crate::util::process::spawn_detached(&mut command)
        .map_err(|error| anyhow::anyhow!("cannot run {}: {error}", cli.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_clean_and_allowed() {
        let text = terminal_sequence(Sequence::Both, "ralph;hooks", "3 fixed\u{7}\u{1b}]0;x");
        assert_eq!(
            text,
            "\u{1b}]9;ralph: 3 fixed]0;x\u{7}\u{1b}]777;notify;ralph,hooks;ralph: 3 fixed]0;x\u{7}"
        );
        assert!(terminal_sequence(Sequence::Osc9, "t", "done").starts_with("\u{1b}]9;done"));
        assert!(
            terminal_sequence(Sequence::Osc777, "t", "done")
                .starts_with("\u{1b}]777;notify;t;done")
        );
    }

    #[test]
    fn config_defaults() {
        let config: NotifyConfig = serde_json::from_str("{}").unwrap();
        assert!(config.desktop);
        assert_eq!(config.sequence, Sequence::Osc9);
        assert!(config.webhook.is_none());
        let config: NotifyConfig = serde_json::from_str(
            r#"{"desktop": false, "sequence": "both", "webhook": "http://127.0.0.1:1/x"}"#,
        )
        .unwrap();
        assert!(!config.desktop);
        assert_eq!(config.sequence, Sequence::Both);
    }
}
