//! `ralph-hooks loop start|status|resume|cancel`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::bail;

use super::Args;
use crate::engine::loop_check::{self, Scope};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::budget::{self, Budget};
use crate::ralph::checks;
use crate::ralph::loop_state::{DEFAULT_MAX_ITERATIONS, LOOP_FILE, LoopState, LoopStatus};
use crate::ralph::loops::{self, LoopConfig, StartRequest};

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let Some(action) = args.positional() else {
        bail!("usage: ralph-hooks loop start|status|resume|cancel")
    };
    match action.as_str() {
        "start" => start(ctx, args),
        "status" => status(ctx, args),
        "resume" => resume(ctx, args),
        "cancel" => cancel(ctx, args),
        other => bail!("unknown loop action {other:?}: use start, status, resume or cancel"),
    }
}

fn start(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let checks = args.values("--check")?;
    if checks.iter().any(|check| check.trim().is_empty()) {
        // `sh -c ""` exits 0 at once: the loop would "pass" without a check.
        anyhow::bail!(
            "--check needs a command, e.g. --check \"cargo test\"; an empty one would pass at once"
        );
    }
    let promise = args.value("--promise")?;
    let max_iterations = args
        .number("--max-iterations")?
        .unwrap_or(DEFAULT_MAX_ITERATIONS);
    let check_timeout_secs = args
        .number("--check-timeout")?
        .unwrap_or(checks::DEFAULT_TIMEOUT.as_secs());
    let explicit_diagnostics = args.flag("--diagnostics");
    let no_diagnostics = args.flag("--no-diagnostics");
    let no_warnings = args.flag("--no-warnings");
    let loop_config = LoopConfig::load(ctx);
    let budget = Budget {
        max_tokens: args
            .value("--max-tokens")?
            .map(|text| parse_tokens(&text))
            .transpose()?,
        max_secs: args
            .value("--max-time")?
            .map(|text| {
                budget::parse_duration(&text).map_err(|e| anyhow::anyhow!("--max-time: {e}"))
            })
            .transpose()?,
        max_cost_usd: args
            .value("--max-cost")?
            .map(|text| parse_usd(&text))
            .transpose()?,
        stuck_after: args.flag("--stop-when-stuck").then(|| {
            loop_config
                .stuck_after
                .unwrap_or(budget::DEFAULT_STUCK_AFTER)
        }),
    };
    let rewake = args.flag("--rewake") || loop_config.rewake;
    let paths = project_paths(ctx, args.values("--path")?)?;
    let goal = args.rest().join(" ");
    args.finish()?;
    if explicit_diagnostics && no_diagnostics {
        bail!("--diagnostics and --no-diagnostics contradict each other: give one");
    }
    // "No LSP errors in the touched files" guards every loop unless turned
    // off; on its own it is a condition only when asked for explicitly.
    // Issue 11: a goal alone (or --path) means "until the project has no
    // errors"; that check covers the touched files too.
    let has_condition = promise.is_some() || !checks.is_empty() || explicit_diagnostics;
    let project = !paths.is_empty() || (!has_condition && !no_diagnostics);
    if !has_condition && !project {
        bail!(
            "a loop needs at least one completion condition: --promise TEXT, --check CMD, --diagnostics or --path; without one it could never finish"
        );
    }
    let diagnostics = !no_diagnostics && !project;
    let state = loops::start(
        ctx,
        StartRequest {
            goal,
            promise,
            checks,
            check_timeout_secs,
            max_iterations,
            diagnostics,
            no_warnings,
            project,
            paths,
            budget,
            rewake,
        },
    )?;
    let mut text = format!(
        "Started Ralph loop {} (max {} iterations).\nGoal: {}\nIt ends when all of these hold:\n",
        state.id, state.max_iterations, state.goal
    );
    for line in state.condition_lines() {
        let _ = writeln!(text, "- {line}");
    }
    let budget_lines = budget::lines(&state.budget, &state.spend, 0);
    if !budget_lines.is_empty() {
        let _ = writeln!(text, "Budget (it ends as FAILED when one runs out):");
        for line in &budget_lines {
            let _ = writeln!(text, "- {}", line.describe());
        }
    }
    if let Some(after) = state.budget.stuck_after {
        let _ = writeln!(
            text,
            "It ends as FAILED (no_progress) after {after} iterations in a row that fix nothing while spending tokens."
        );
    }
    if state.rewake {
        let _ = writeln!(
            text,
            "Rewake mode: each turn ends and the Stop hook wakes the session with the follow-up, so Claude Code's block cap is never met."
        );
        if !rewake_hook_registered(ctx) {
            eprintln!(
                "ralph-hooks: warning: no asyncRewake Stop hook (`ralph-stop-loop-controller --rewake`) is registered in {}: run `ralph-hooks install` again, or this loop's stops are not evaluated",
                ctx.project_root.join(".claude/settings.json").display()
            );
        }
    }
    match &state.session_id {
        Some(session) => {
            let _ = writeln!(text, "Bound to session {session}.");
        }
        None => {
            let _ = writeln!(
                text,
                "Not bound to a session yet: the first Claude Code session that stops claims it."
            );
        }
    }
    let _ = write!(text, "Cancel with `ralph-hooks loop cancel`.");
    println!("{text}");
    if state.project {
        println!("\n{}", first_feedback(ctx, &state));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--max-tokens 200000`, `200k`, `2M`.
fn parse_tokens(text: &str) -> anyhow::Result<u64> {
    let clean = text.trim().replace(['_', ','], "");
    let (digits, scale) = match clean.chars().last() {
        Some('k' | 'K') => (&clean[..clean.len() - 1], 1_000.0),
        Some('m' | 'M') => (&clean[..clean.len() - 1], 1_000_000.0),
        _ => (clean.as_str(), 1.0),
    };
    let value: f64 = digits.parse().map_err(|_| {
        anyhow::anyhow!("--max-tokens must be a number (200000, 200k, 2M), got {text:?}")
    })?;
    if !(value.is_finite() && value >= 0.0) {
        bail!("--max-tokens must be a positive number, got {text:?}");
    }
    Ok((value * scale).round() as u64)
}

/// `--max-cost 5`, `$2.50`.
fn parse_usd(text: &str) -> anyhow::Result<f64> {
    let value: f64 = text.trim().trim_start_matches('$').parse().map_err(|_| {
        anyhow::anyhow!("--max-cost must be an amount in USD (5, 2.50), got {text:?}")
    })?;
    if !value.is_finite() {
        bail!("--max-cost must be an amount in USD, got {text:?}");
    }
    Ok(value)
}

/// Whether a settings file Claude Code reads for this project registers
/// our `--rewake` Stop hook with `asyncRewake`.
fn rewake_hook_registered(ctx: &Ctx) -> bool {
    let mut files = vec![
        ctx.project_root.join(".claude/settings.json"),
        ctx.project_root.join(".claude/settings.local.json"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        files.push(std::path::Path::new(&home).join(".claude/settings.json"));
    }
    files.iter().any(|path| {
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        let Ok(settings) = serde_json::from_str::<serde_json::Value>(&text) else {
            return false;
        };
        settings["hooks"]["Stop"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|group| group["hooks"].as_array())
            .flatten()
            .any(|handler| {
                handler["asyncRewake"].as_bool() == Some(true)
                    && handler["command"].as_str().is_some_and(|command| {
                        command.contains("ralph-stop-loop-controller")
                            && command.contains(crate::hook::REWAKE_ARG)
                    })
            })
    })
}

/// `loop start`'s first project check, through the daemon (so its servers
/// are warm for the Stops), kept as the record the first Stop compares with.
fn first_feedback(ctx: &Ctx, state: &LoopState) -> String {
    let settings = Settings::load(ctx);
    let Some(options) = loop_check::options(ctx, &settings, state, Scope::Project) else {
        return String::new();
    };
    let checked = super::check::check(ctx, &options);
    let (text, record) =
        loop_check::first_feedback(state, checked, loop_check::caps(&settings), options.budget);
    if let Some(record) = record
        && let Err(error) = crate::ralph::loops::record_start(ctx, &state.id, record)
    {
        eprintln!("ralph-hooks: warning: cannot keep the start check in the loop: {error:#}");
    }
    text
}

/// `--path` values as project-relative paths (the Stop hook runs elsewhere);
/// a path that does not exist is refused now rather than at every Stop.
fn project_paths(ctx: &Ctx, paths: Vec<String>) -> anyhow::Result<Vec<String>> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    paths
        .into_iter()
        .map(|given| {
            let absolute = cwd.join(&given);
            if !absolute.exists() {
                bail!("--path {given}: no such file or directory");
            }
            Ok(match absolute.strip_prefix(&ctx.project_root) {
                Ok(relative) if !relative.as_os_str().is_empty() => {
                    relative.to_string_lossy().into_owned()
                }
                Ok(_) => ".".into(),
                Err(_) => absolute.to_string_lossy().into_owned(),
            })
        })
        .collect()
}

fn status(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    args.finish()?;
    let state = ctx.store().read_json::<LoopState>(LOOP_FILE)?;
    if json {
        let spend = state
            .as_ref()
            .map(|state| budget::view(&state.budget, &state.spend, state.active_secs(ctx.now())));
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "loop": state, "spend": spend }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    match state {
        None => println!("No Ralph loop in {}.", ctx.state_root.display()),
        Some(state) => print!("{}", describe(&state, ctx.now())),
    }
    Ok(ExitCode::SUCCESS)
}

/// A person's view of a loop.
pub fn describe(state: &LoopState, now: chrono::DateTime<chrono::Utc>) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "Ralph loop {} — {}", state.id, state.status.as_str());
    let _ = writeln!(text, "  goal:       {}", state.goal);
    let _ = writeln!(
        text,
        "  iteration:  {}/{}",
        state.iteration, state.max_iterations
    );
    let _ = writeln!(
        text,
        "  session:    {}",
        state.session_id.as_deref().unwrap_or("(not claimed yet)")
    );
    let _ = writeln!(text, "  started:    {}", state.started_at.to_rfc3339());
    if state.rewake {
        let _ = writeln!(
            text,
            "  mode:       rewake (each turn ends; the Stop hook wakes the session)"
        );
    }
    let _ = writeln!(
        text,
        "  spent:      {}",
        budget::summary(&state.spend, state.active_secs(now))
    );
    for line in budget::lines(&state.budget, &state.spend, state.active_secs(now)) {
        let _ = writeln!(text, "  budget:     {}", line.describe());
    }
    if let Some(after) = state.budget.stuck_after {
        let _ = writeln!(
            text,
            "  stuck:      ends after {after} iterations in a row without progress"
        );
    }
    if state.capped > 0 {
        let _ = writeln!(
            text,
            "  capped:     {} turn(s) ended at Claude Code's block cap (last {})",
            state.capped,
            state.capped_at.map(|t| t.to_rfc3339()).unwrap_or_default()
        );
    }
    for failure in &state.api_failures {
        let _ = writeln!(
            text,
            "  API error:  {} {}: {}",
            failure.at.to_rfc3339(),
            failure.error,
            failure.message
        );
    }
    if state.paused_by_usage_limit() {
        let _ = writeln!(
            text,
            "  paused:     {} by a usage limit{} — it blocks no stop; your next message in Claude Code (or `ralph-hooks loop resume`) runs it again",
            state.paused_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            state
                .resets_at
                .map(|at| format!(" (resets {})", at.to_rfc3339()))
                .unwrap_or_default()
        );
    } else if state.status == LoopStatus::Paused {
        let _ = writeln!(
            text,
            "  paused:     {} by the user — it blocks no stop; `ralph-hooks loop resume` (or /resume-loop) runs it again, `ralph-hooks loop cancel` ends it",
            state.paused_at.map(|t| t.to_rfc3339()).unwrap_or_default()
        );
    }
    if let Some(reason) = &state.completion_reason {
        let _ = writeln!(
            text,
            "  ended:      {} ({reason}{})",
            state.ended_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            state
                .completion_detail
                .as_deref()
                .map(|detail| format!(": {detail}"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(text, "  conditions:");
    for line in state.condition_lines() {
        let _ = writeln!(text, "    - {line}");
    }
    if !state.history.is_empty() {
        let _ = writeln!(text, "  history:");
        for entry in &state.history {
            let failed = if entry.failed.is_empty() {
                "all conditions held".to_string()
            } else {
                entry.failed.join(", ")
            };
            let spent = entry
                .tokens
                .map(|tokens| format!(" ({} tokens)", budget::format_tokens(tokens.total())))
                .unwrap_or_default();
            let capped = if entry.capped_at.is_some() {
                " [capped]"
            } else {
                ""
            };
            let _ = writeln!(
                text,
                "    #{:<3} {} {:<20} {failed}{spent}{capped}",
                entry.iteration,
                entry.at.format("%Y-%m-%d %H:%M:%S"),
                entry.decision
            );
        }
    }
    text
}

fn resume(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    args.finish()?;
    match loops::resume(ctx)? {
        loops::Resumed::Resumed(state) => println!(
            "Resumed Ralph loop {} at iteration {}/{}: it blocks stops again until its conditions hold.\nGoal: {}",
            state.id, state.iteration, state.max_iterations, state.goal
        ),
        loops::Resumed::AlreadyRunning(state) => println!(
            "Ralph loop {} is already RUNNING (iteration {}/{}).",
            state.id, state.iteration, state.max_iterations
        ),
        loops::Resumed::NotPaused(None) => {
            bail!("no paused loop to resume: start one with `ralph-hooks loop start`")
        }
        loops::Resumed::NotPaused(Some(state)) => bail!(
            "loop {} is {}, not paused: a finished loop cannot be resumed; start a new one with `ralph-hooks loop start`",
            state.id,
            state.status.as_str()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn cancel(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    args.finish()?;
    match loops::cancel(ctx)? {
        None => println!("No active loop to cancel."),
        Some(state) => {
            println!(
                "Cancelled Ralph loop {} at iteration {}/{}. History kept in {}/loops/{}.json.",
                state.id,
                state.iteration,
                state.max_iterations,
                ctx.state_root.display(),
                state.id
            );
            if state.project {
                let latest = state
                    .history
                    .iter()
                    .rev()
                    .find_map(|entry| entry.conditions.get("project"))
                    .or(state.start_record.as_ref());
                println!(
                    "Progress so far: {}.",
                    state.project_progress(latest, ctx.now())
                );
            }
            println!("Restart it with: {}", state.restart_command());
        }
    }
    Ok(ExitCode::SUCCESS)
}
