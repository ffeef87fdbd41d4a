//! `ralph-hooks statusline`: one short line for Claude Code's `statusLine`
//! setting, so the user sees where the loop and the task stand
//! without asking:
//!
//! ```text
//! ralph ▶ loop 3/10 · 2 errors · 41k/200k tok · task 2/5 (s3 GitHub OAuth…)
//! ralph ⏸ loop 3/10 paused · task 2/5 (s3 GitHub OAuth…)
//! ralph ⏸ loop 3/10 paused (usage limit, resets 18:57 UTC)
//! ```
//!
//! Nothing at all when idle (no active loop or task for this session).
//! Claude Code pipes its statusLine JSON on stdin; we read `session_id` and
//! `workspace.project_dir` (else `cwd`) and tolerate everything else. It
//! reads two small state files and the active task's file; [`render`] is pure.
//!
//! It runs every few seconds, so the usual call (`statusline`, perhaps with
//! `--project DIR` and `--debug`) is recognised before the command line's
//! grammar is built ([`plain_call`]): building clap's tree of every command
//! would cost it more than its own work.

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;

use crate::hook::ctx::Ctx;
use crate::ralph::loop_ctl::{self, Ownership};
use crate::ralph::loop_state::{LOOP_FILE, LoopState, LoopStatus};
use crate::tasks::{self, StepsProgress, TaskDoc, continuation};

/// What Claude Code sends; every field may be missing.
#[derive(Debug, Default, Deserialize)]
struct StatusInput {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    workspace: Option<Workspace>,
}

#[derive(Debug, Default, Deserialize)]
struct Workspace {
    #[serde(default)]
    project_dir: Option<String>,
    #[serde(default)]
    current_dir: Option<String>,
}

/// The statusLine JSON is a few KiB; more is not a status line.
const MAX_STDIN: u64 = 1024 * 1024;

/// How much of the current step's text fits in the line.
const STEP_CHARS: usize = 18;

/// `statusline` with only the options it uses.
#[derive(Debug, PartialEq, Eq)]
pub struct PlainCall {
    pub project: Option<String>,
    pub debug: bool,
}

/// The call Claude Code makes (`ralph-hooks statusline`, perhaps with
/// `--project DIR`, `--project=DIR`, `--debug`, in any order), or `None` for
/// anything else — help, another option, a second `--project` — which the
/// full parser answers.
pub fn plain_call(args: &[OsString]) -> Option<PlainCall> {
    let mut call = PlainCall {
        project: None,
        debug: false,
    };
    let mut named = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        match word {
            "statusline" if !named => named = true,
            "--debug" => call.debug = true,
            "--project" if call.project.is_none() => {
                call.project = Some(words.next()?.to_str()?.to_string());
            }
            _ => match word.strip_prefix("--project=") {
                Some(dir) if call.project.is_none() => call.project = Some(dir.to_string()),
                _ => return None,
            },
        }
    }
    named.then_some(call)
}

pub fn run(project: Option<&str>, debug: bool) -> anyhow::Result<ExitCode> {
    let mut bytes = Vec::new();
    // No stdin (run by hand in a terminal) is an empty input, not an error.
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        std::io::stdin()
            .lock()
            .take(MAX_STDIN)
            .read_to_end(&mut bytes)?;
    }
    let input: StatusInput = if bytes.iter().all(u8::is_ascii_whitespace) {
        StatusInput::default()
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => serde_json::from_value(value).unwrap_or_default(),
            Err(error) => anyhow::bail!("statusLine input is not JSON: {error}"),
        }
    };
    let workspace = input.workspace.unwrap_or_default();
    let root: Option<PathBuf> = project
        .map(PathBuf::from)
        .or(workspace.project_dir.map(PathBuf::from))
        .or(workspace.current_dir.map(PathBuf::from))
        .or(input.cwd.map(PathBuf::from));
    let mut ctx = Ctx::for_cli(root.as_deref().map(Path::new))?;
    ctx.debug |= debug;
    if input.session_id.is_some() {
        ctx.session_id = input.session_id;
    }
    let line = line_for(&ctx)?;
    if !line.is_empty() {
        println!("{line}");
    } else if ctx.debug {
        // An empty line looks like a broken status line: say why.
        eprintln!("[DEBUG] statusline: prints nothing: {}", why_empty(&ctx)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Why the line is empty, for `--debug`.
fn why_empty(ctx: &Ctx) -> anyhow::Result<String> {
    let store = ctx.store();
    if !store.root().is_dir() {
        return Ok(format!(
            "no state folder at {} (no loop or task was ever started for this project; --project DIR names another)",
            store.root().display()
        ));
    }
    let loop_state = if store.exists(LOOP_FILE) {
        store.read_json::<LoopState>(LOOP_FILE)?
    } else {
        None
    };
    let task = tasks::active(store)?;
    Ok(empty_reason(
        loop_state.as_ref(),
        task.as_ref(),
        ctx.session_id.as_deref(),
    ))
}

/// Why [`render`] shows nothing for these inputs, in words.
pub fn empty_reason(
    loop_state: Option<&LoopState>,
    task: Option<&TaskDoc>,
    session: Option<&str>,
) -> String {
    let mut reasons = Vec::new();
    match loop_state {
        None => reasons.push("no loop".to_string()),
        Some(state) if loop_ctl::ownership(state, session) == Ownership::Other => {
            reasons.push(format!(
                "loop {} belongs to session {}, and this is {} (the line shows only this session's loop; `ralph-hooks loop status` shows it)",
                state.id,
                state.session_id.as_deref().unwrap_or("?"),
                session.map_or_else(
                    || "no session (no session_id on stdin)".to_string(),
                    |s| format!("session {s}")
                )
            ));
        }
        Some(state) => reasons.push(format!(
            "loop {} is {} (a finished loop is history: `ralph-hooks loop status` shows it)",
            state.id,
            state.status.as_str()
        )),
    }
    match task {
        None => reasons.push("no active task".to_string()),
        Some(doc) => reasons.push(format!(
            "the active task belongs to session {}",
            doc.field("Session").unwrap_or("?")
        )),
    }
    reasons.join("; ")
}

/// Reads what the line shows; a missing state root is the idle case.
fn line_for(ctx: &Ctx) -> anyhow::Result<String> {
    let store = ctx.store();
    if !store.root().is_dir() {
        return Ok(String::new());
    }
    let loop_state = if store.exists(LOOP_FILE) {
        store.read_json::<LoopState>(LOOP_FILE)?
    } else {
        None
    };
    let task = tasks::active(store)?;
    let paused = continuation::paused_by_user(ctx)?;
    Ok(render(
        loop_state.as_ref(),
        task.as_ref(),
        ctx.session_id.as_deref(),
        paused,
    ))
}

/// The line, from the loop, the active task, this session, and whether the
/// user paused continuation. Empty when there is nothing to show.
pub fn render(
    loop_state: Option<&LoopState>,
    task: Option<&TaskDoc>,
    session: Option<&str>,
    continuation_paused: bool,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut symbol = "▶";
    if let Some(state) = loop_state.filter(|s| loop_ctl::ownership(s, session) != Ownership::Other)
    {
        match state.status {
            LoopStatus::Running => {
                parts.push(format!("loop {}/{}", state.iteration, state.max_iterations));
                if let Some(failing) = failing_summary(state) {
                    parts.push(failing);
                }
                parts.extend(spend_parts(state));
            }
            LoopStatus::Paused if state.paused_by_usage_limit() => {
                symbol = "⏸";
                let resets = state
                    .resets_at
                    .map(|at| format!(", resets {}", at.format("%H:%M UTC")))
                    .unwrap_or_default();
                parts.push(format!(
                    "loop {}/{} paused (usage limit{resets})",
                    state.iteration, state.max_iterations
                ));
            }
            LoopStatus::Paused => {
                symbol = "⏸";
                parts.push(format!(
                    "loop {}/{} paused",
                    state.iteration, state.max_iterations
                ));
            }
            // A finished loop is history: `ralph-hooks loop status` has it.
            LoopStatus::Completed | LoopStatus::Cancelled | LoopStatus::Failed => {}
        }
    }
    if let Some(doc) = task.filter(|doc| match (doc.field("Session"), session) {
        (Some(owner), Some(session)) => owner == session,
        _ => true,
    }) {
        parts.push(task_part(doc));
        if doc.field("Status") == Some(tasks::BLOCKED) {
            symbol = if symbol == "⏸" { symbol } else { "■" };
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    if continuation_paused && symbol == "▶" {
        symbol = "⏸";
        parts.push("paused".into());
    }
    format!("ralph {symbol} {}", parts.join(" · "))
}

/// What the loop spent, against its budgets when it has them: `41k/200k
/// tok`, `~$0.84/$5.00`, `12m/1h`; tokens alone when there is no budget.
fn spend_parts(state: &LoopState) -> Vec<String> {
    let short = |n: u64| match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    };
    let mut parts = Vec::new();
    let tokens = state.spend.tokens.total();
    match state.budget.max_tokens {
        Some(limit) => parts.push(format!("{}/{} tok", short(tokens), short(limit))),
        None if tokens > 0 => parts.push(format!("{} tok", short(tokens))),
        None => {}
    }
    if let Some(limit) = state.budget.max_cost_usd {
        parts.push(format!(
            "~{}/{}",
            crate::ralph::budget::format_usd(state.spend.cost_usd),
            crate::ralph::budget::format_usd(limit)
        ));
    }
    if let Some(limit) = state.budget.max_secs {
        // The line has no clock of its own to spare: the last update's.
        let used = state.active_secs(state.updated_at);
        let minutes = |secs: i64| crate::ralph::budget::human_duration(secs);
        parts.push(format!("{}/{}", minutes(used), minutes(limit as i64)));
    }
    parts
}

/// `2 errors` from the last iteration's diagnostics record, else the
/// number of failing conditions.
fn failing_summary(state: &LoopState) -> Option<String> {
    let last = state.history.last()?;
    if last.failed.is_empty() {
        return None;
    }
    let errors: u64 = last
        .conditions
        .get("diagnostics")
        .and_then(|record| record.get("files"))
        .and_then(Value::as_object)
        .map(|files| {
            files
                .values()
                .filter_map(|counts| counts.get("errors").and_then(Value::as_u64))
                .sum()
        })
        .unwrap_or(0);
    if errors > 0 {
        return Some(format!(
            "{errors} error{}",
            if errors == 1 { "" } else { "s" }
        ));
    }
    Some(format!("{} failing", last.failed.len()))
}

/// `task 2/5 (s3 GitHub OAuth…)`, `task 5/5`, or `task blocked`.
fn task_part(doc: &TaskDoc) -> String {
    if doc.field("Status") == Some(tasks::BLOCKED) {
        return "task blocked".into();
    }
    if doc.steps().is_empty() {
        return "task (no steps)".into();
    }
    let progress = StepsProgress::of(doc.steps());
    let mut text = format!("task {}/{}", progress.closed(), progress.total);
    if let Some(step) = tasks::steps::current_step(doc) {
        let mut content: String = step.content.chars().take(STEP_CHARS).collect();
        if step.content.chars().count() > STEP_CHARS {
            content = content.trim_end().to_string() + "…";
        }
        text.push_str(&format!(" ({} {content})", step.id));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loop_state(status: &str, session: Option<&str>, history: Value) -> LoopState {
        serde_json::from_value(json!({
            "version": 1, "id": "loop-1", "status": status, "goal": "ship it",
            "promise": "DONE", "checks": [], "check_timeout_secs": 300, "diagnostics": true,
            "no_warnings": false, "iteration": 3, "max_iterations": 10, "session_id": session,
            "project_root": "/p", "started_at": "2026-11-21T11:00:00Z",
            "updated_at": "2026-11-21T11:00:00Z", "history": history
        }))
        .unwrap()
    }

    fn failing_with_errors() -> Value {
        json!([{
            "iteration": 3, "at": "2026-11-21T11:00:00Z", "decision": "block",
            "failed": ["diagnostics", "promise"], "fingerprint": "x",
            "conditions": {"diagnostics": {"files": {
                "a.py": {"errors": 1, "warnings": 4},
                "b.py": {"errors": 1, "warnings": 0},
                "c.py": {"inconclusive": true}
            }}}
        }])
    }

    fn task(session: Option<&str>) -> TaskDoc {
        let mut doc = TaskDoc::new("task_t");
        if let Some(session) = session {
            doc.set_field("Session", session);
        }
        let steps: Vec<String> = [
            "read the auth code",
            "google",
            "GitHub OAuth callback handler",
            "tests",
            "docs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        tasks::steps::set_steps(&mut doc, &steps).unwrap();
        tasks::steps::complete_step(&mut doc, "s1", None).unwrap();
        tasks::steps::complete_step(&mut doc, "s2", None).unwrap();
        doc
    }

    #[test]
    fn only_the_plain_call_skips_the_parser() {
        let call =
            |words: &[&str]| plain_call(&words.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(
            call(&["statusline"]),
            Some(PlainCall {
                project: None,
                debug: false
            })
        );
        assert_eq!(
            call(&["--project", "/p", "statusline", "--debug"]),
            Some(PlainCall {
                project: Some("/p".into()),
                debug: true
            })
        );
        assert_eq!(
            call(&["statusline", "--project=/p"]).and_then(|c| c.project),
            Some("/p".into())
        );
        for other in [
            &["statusline", "--help"][..],
            &["statusline", "-h"],
            &["statusline", "extra"],
            &["statusline", "--project", "a", "--project", "b"],
            &["statusline", "--project"],
            &["statusline", "--color", "never"],
            &["status"],
            &["--debug"],
            &[],
        ] {
            assert_eq!(call(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_line_for_each_state() {
        let running = loop_state("RUNNING", Some("me"), failing_with_errors());
        let doc = task(Some("me"));
        assert_eq!(
            render(Some(&running), Some(&doc), Some("me"), false),
            "ralph ▶ loop 3/10 · 2 errors · task 2/5 (s3 GitHub OAuth callb…)"
        );
        let paused = loop_state("PAUSED", None, failing_with_errors());
        assert_eq!(
            render(Some(&paused), None, Some("me"), false),
            "ralph ⏸ loop 3/10 paused"
        );
        let mut spending = loop_state("RUNNING", Some("me"), json!([]));
        spending.spend.tokens.input = 41_230;
        spending.budget.max_tokens = Some(200_000);
        spending.budget.max_cost_usd = Some(5.0);
        spending.spend.cost_usd = 0.84;
        assert_eq!(
            render(Some(&spending), None, Some("me"), false),
            "ralph ▶ loop 3/10 · 41k/200k tok · ~$0.84/$5.00"
        );
        let mut limited = loop_state("PAUSED", Some("me"), json!([]));
        limited.paused_by = Some("usage_limit".into());
        limited.resets_at = Some("2026-11-21T18:57:00Z".parse().unwrap());
        assert_eq!(
            render(Some(&limited), None, Some("me"), false),
            "ralph ⏸ loop 3/10 paused (usage limit, resets 18:57 UTC)"
        );
        let done = loop_state("COMPLETED", Some("me"), json!([]));
        assert_eq!(render(Some(&done), None, Some("me"), false), "");
        assert_eq!(
            render(Some(&running), Some(&doc), Some("other"), false),
            "",
            "another session's loop and task are not shown"
        );
        assert_eq!(render(None, None, Some("me"), true), "", "idle");
        assert_eq!(
            render(None, Some(&doc), Some("me"), true),
            "ralph ⏸ task 2/5 (s3 GitHub OAuth callb…) · paused"
        );
    }
}
