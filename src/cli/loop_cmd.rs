//! `ralph-hooks loop start|status|resume|cancel|receipt`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::bail;

use super::progress::{self, Progress};
use crate::engine::loop_check::{self, Scope};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::budget::{self, Budget};
use crate::ralph::checks;
use crate::ralph::loop_state::{DEFAULT_MAX_ITERATIONS, LOOP_FILE, LoopState, LoopStatus};
use crate::ralph::loops::{self, LoopConfig, StartRequest};

/// How times print for a person: to the second, no nanoseconds.
pub const TIME: &str = "%Y-%m-%d %H:%M:%S UTC";

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks loop start \"fix all type errors\"       # until the project has no errors
  ralph-hooks loop start \"make the tests pass\" --check \"cargo test\" --max-iterations 10
  ralph-hooks loop status
  ralph-hooks loop cancel";

#[derive(Debug, clap::Subcommand)]
pub enum LoopCommand {
    /// Start a loop: Claude cannot end its turn until every condition holds
    #[command(after_help = START_EXAMPLES)]
    Start(StartArgs),
    /// The loop: goal, iteration, conditions and each iteration's decision
    Status {
        /// The loop as JSON (`{"loop": …}`)
        #[arg(long)]
        json: bool,
    },
    /// Pause the running loop, as saying "stop" to Claude does
    Pause,
    /// Run a loop the user paused ("stop") again
    Resume,
    /// End the loop; its history is kept
    Cancel,
    /// A finished loop's completion receipt (an in-toto statement), signed when asked
    #[command(after_help = RECEIPT_EXAMPLES)]
    Receipt {
        /// The loop (default: the last one)
        #[arg(value_name = "LOOP-ID")]
        id: Option<String>,
        /// Write it to this file instead of stdout
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// Sign it with this SSH key (`ssh-keygen -Y sign`) in a DSSE envelope
        #[arg(long, value_name = "KEY")]
        sign_with: Option<std::path::PathBuf>,
    },
}

const RECEIPT_EXAMPLES: &str = "\
Examples:
  ralph-hooks loop receipt --out receipt.json
  ralph-hooks loop receipt loop-20261125T101500Z-0001 --sign-with ~/.ssh/id_ed25519 --out receipt.json
  ralph-hooks verify receipt.json";

const START_EXAMPLES: &str = "\
A goal alone runs until the project has no errors (what `ralph-hooks check` reports).

Examples:
  ralph-hooks loop start \"fix all type errors\"
  ralph-hooks loop start \"fix the parser\" --path src/parser
  ralph-hooks loop start \"make the suite pass\" --check \"cargo test\" --check-timeout 600
  ralph-hooks loop start \"ship it\" --promise DONE --no-diagnostics";

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// What the loop is for, in words
    #[arg(value_name = "GOAL")]
    pub goal: Vec<String>,
    /// A command that must exit 0 (run through `sh -c` in the project root); repeatable
    #[arg(long = "check", value_name = "CMD", allow_hyphen_values = true)]
    pub checks: Vec<String>,
    /// Claude's last message must end with <promise>TEXT</promise>
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub promise: Option<String>,
    /// Give up after this many failing stops
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ITERATIONS)]
    pub max_iterations: u32,
    /// Seconds each --check may run before its process group is killed
    #[arg(long, value_name = "SECS", default_value_t = checks::DEFAULT_TIMEOUT.as_secs())]
    pub check_timeout: u64,
    /// Also require no language-server errors in the project (`=touched`: in the files the loop touched)
    #[arg(
        long,
        value_name = "SCOPE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "project",
        hide_possible_values = true
    )]
    pub diagnostics: Option<DiagnosticsScope>,
    /// Do not look at language-server errors at all
    #[arg(long)]
    pub no_diagnostics: bool,
    /// Count warnings as failures too
    #[arg(long)]
    pub no_warnings: bool,
    /// Only these files or folders must be free of errors; repeatable
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<String>,
    /// End the loop (FAILED, budget) once it has spent this many tokens (200000, 200k, 2M)
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<String>,
    /// End the loop once it has run this long, pauses left out (90m, 2h, 1h30m)
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// End the loop once its estimated cost reaches this many USD (an estimate from a price table)
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<String>,
    /// End the loop (FAILED, no_progress) after iterations in a row that fix nothing
    #[arg(long)]
    pub stop_when_stuck: bool,
    /// Let each turn end and wake the session with the follow-up (never meets the block cap)
    #[arg(long)]
    pub rewake: bool,
}

/// What `--diagnostics` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiagnosticsScope {
    /// Every file of the project
    Project,
    /// Only the files the loop touched
    Touched,
}

pub fn run(ctx: &Ctx, command: LoopCommand) -> anyhow::Result<ExitCode> {
    if matches!(
        command,
        LoopCommand::Start(_) | LoopCommand::Pause | LoopCommand::Resume | LoopCommand::Cancel
    ) {
        settle_calls_over(ctx);
    }
    match command {
        LoopCommand::Start(args) => start(ctx, args),
        LoopCommand::Status { json } => status(ctx, json),
        LoopCommand::Pause => pause(ctx),
        LoopCommand::Resume => resume(ctx),
        LoopCommand::Cancel => cancel(ctx),
        LoopCommand::Receipt { id, out, sign_with } => {
            super::receipts::export(ctx, id, out, sign_with)
        }
    }
}

fn start(ctx: &Ctx, args: StartArgs) -> anyhow::Result<ExitCode> {
    let checks = args.checks;
    if checks.iter().any(|check| check.trim().is_empty()) {
        // `sh -c ""` exits 0 at once: the loop would "pass" without a check.
        anyhow::bail!(
            "--check needs a command, e.g. --check \"cargo test\"; an empty one would pass at once"
        );
    }
    let promise = args.promise;
    let max_iterations = args.max_iterations;
    let check_timeout_secs = args.check_timeout;
    let budget_secs = crate::ralph::checks::STOP_CHECKS_BUDGET.as_secs();
    if (checks.len() as u64).saturating_mul(check_timeout_secs) > budget_secs {
        // Each Stop gives the checks this long in all (under Claude Code's
        // timeout for the hook); say so before a long suite meets it.
        eprintln!(
            "ralph-hooks: note: {} check(s) × --check-timeout {check_timeout_secs} s is more than the {} min a Stop gives all checks together; a check still running then fails as timed out.",
            checks.len(),
            budget_secs / 60
        );
    }
    let no_diagnostics = args.no_diagnostics;
    let no_warnings = args.no_warnings;
    let loop_config = LoopConfig::load(ctx);
    let budget = Budget {
        max_tokens: args.max_tokens.as_deref().map(parse_tokens).transpose()?,
        max_secs: args
            .max_time
            .as_deref()
            .map(|text| {
                budget::parse_duration(text).map_err(|e| anyhow::anyhow!("--max-time: {e}"))
            })
            .transpose()?,
        max_cost_usd: args.max_cost.as_deref().map(parse_usd).transpose()?,
        stuck_after: args.stop_when_stuck.then(|| {
            loop_config
                .stuck_after
                .unwrap_or(budget::DEFAULT_STUCK_AFTER)
        }),
    };
    let rewake = args.rewake || loop_config.rewake;
    let paths = project_paths(ctx, args.paths)?;
    let goal = args.goal.join(" ");
    // `--diagnostics` (or `=project`) asks for the project to have no
    // errors, as a goal alone does; `--diagnostics=touched` for only the
    // files the loop touched, which also guards every loop with a --check
    // or --promise unless --no-diagnostics turns it off.
    let scope = args.diagnostics.map(|scope| match scope {
        DiagnosticsScope::Project => Scope::Project,
        DiagnosticsScope::Touched => Scope::Touched,
    });
    if scope.is_some() && no_diagnostics {
        bail!("--diagnostics and --no-diagnostics contradict each other: give one");
    }
    let has_condition = promise.is_some() || !checks.is_empty() || scope.is_some();
    let project =
        !paths.is_empty() || scope == Some(Scope::Project) || (!has_condition && !no_diagnostics);
    if !has_condition && !project {
        bail!(
            "a loop needs at least one completion condition: --promise TEXT, --check CMD, --diagnostics or --path; without one it could never finish"
        );
    }
    // The project check covers the touched files too.
    let diagnostics = !no_diagnostics && !project;
    let rule_problems = if project || diagnostics {
        rule_problems(ctx)
    } else {
        Vec::new()
    };
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
            rule_problems: rule_problems.clone(),
        },
    )?;
    let mut text = format!(
        "Started Ralph loop {} (max {} iterations).\nGoal: {}\nIt ends when all of these hold:\n",
        state.id,
        state.max_iterations,
        crate::util::text::escape_controls_in_prose(&state.goal)
    );
    for line in state.condition_lines() {
        let _ = writeln!(text, "- {line}");
    }
    let _ = writeln!(text, "{}", coverage_note(&state));
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
    for note in &rule_problems {
        let _ = write!(
            text,
            "\nNote — {note} (its rules are not checked until it is fixed)"
        );
    }
    println!("{text}");
    if state.project {
        println!("\n{}", first_feedback(ctx, &state));
    }
    Ok(ExitCode::SUCCESS)
}

/// What the conditions look at, said so that nobody takes the goal for a
/// condition: the goal's words are never checked, and with a --check or a
/// --promise the language-server condition sees only the files the loop
/// touches.
pub fn coverage_note(state: &LoopState) -> String {
    let mut text = String::from(
        "NOTE: the goal text is not checked; it is what Claude is asked to do. The loop ends when the conditions above hold, whatever the goal says.",
    );
    if state.project && !state.paths.is_empty() {
        let _ = write!(
            text,
            "\nNOTE: language-server errors are checked ONLY in {}; errors elsewhere do not keep the loop running. Leave out --path to cover the whole project.",
            state.paths.join(", ")
        );
    } else if state.project {
        text.push_str(
            "\nLanguage-server errors are checked in EVERY file of the project (what `ralph-hooks check` reports).",
        );
    } else if state.diagnostics {
        text.push_str(
            "\nNOTE: language-server errors are checked ONLY in the files this loop touches; an error in a file it never edits does not keep it running. Add --diagnostics to require the whole project to have no errors.",
        );
    } else {
        text.push_str(
            "\nNOTE: language-server errors are not checked at all (--no-diagnostics). Add --diagnostics to require the whole project to have no errors.",
        );
    }
    text
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

/// The project's ast-grep rule files that do not load, as the loop's
/// messages say them; none when the rules are off.
fn rule_problems(ctx: &Ctx) -> Vec<String> {
    if !Settings::load(ctx).config.ast_grep {
        return Vec::new();
    }
    let rules = crate::engine::run::rule_set(ctx);
    loop_check::rule_notes(rules.problems())
}

/// `loop start`'s first project check, through the daemon (so its servers
/// are warm for the Stops), kept as the record the first Stop compares with.
fn first_feedback(ctx: &Ctx, state: &LoopState) -> String {
    let settings = Settings::load(ctx);
    let Some(options) = loop_check::options(ctx, &settings, state, Scope::Project) else {
        return String::new();
    };
    let progress = Progress::start("checking the project", progress::wanted(false));
    let checked = super::check::check_with_progress(ctx, &options, &mut |done, total| {
        progress.set(done, total)
    });
    progress.finish();
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

fn status(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
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
        Some(state) => {
            // The goal, checks and messages come from loop.json: no raw
            // control character reaches the terminal.
            print!(
                "{}",
                crate::util::text::escape_controls_in_prose(&describe(&state, ctx.now()))
            );
            if let Ok(relative) = crate::receipts::record::relative_path(&state.id)
                && ctx.store().exists(&relative)
            {
                println!(
                    "  receipt:    {} (`ralph-hooks verify` re-runs it)",
                    crate::util::text::escape_controls(
                        &ctx.store().path(&relative).to_string_lossy()
                    )
                );
            }
        }
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
    let _ = writeln!(text, "  started:    {}", state.started_at.format(TIME));
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
            state
                .capped_at
                .map(|t| t.format(TIME).to_string())
                .unwrap_or_default()
        );
    }
    for failure in &state.api_failures {
        let _ = writeln!(
            text,
            "  API error:  {} {}: {}",
            failure.at.format(TIME),
            failure.error,
            failure.message
        );
    }
    if state.paused_by_usage_limit() {
        let _ = writeln!(
            text,
            "  paused:     {} by a usage limit{} — it blocks no stop; your next message in Claude Code (or `ralph-hooks loop resume`) runs it again",
            state
                .paused_at
                .map(|t| t.format(TIME).to_string())
                .unwrap_or_default(),
            state
                .resets_at
                .map(|at| format!(" (resets {})", at.format(TIME)))
                .unwrap_or_default()
        );
    } else if state.status == LoopStatus::Paused {
        let _ = writeln!(
            text,
            "  paused:     {} by the user — it blocks no stop; `ralph-hooks loop resume` (or /resume-loop) runs it again, `ralph-hooks loop cancel` ends it",
            state
                .paused_at
                .map(|t| t.format(TIME).to_string())
                .unwrap_or_default()
        );
    }
    if let Some(reason) = &state.completion_reason {
        let _ = writeln!(
            text,
            "  ended:      {} ({reason}{})",
            state
                .ended_at
                .map(|t| t.format(TIME).to_string())
                .unwrap_or_default(),
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

fn resume(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    match loops::resume(ctx)? {
        loops::Resumed::Resumed(state) => println!(
            "Resumed Ralph loop {} at iteration {}/{}: it blocks stops again until its conditions hold.\nGoal: {}",
            state.id,
            state.iteration,
            state.max_iterations,
            crate::util::text::escape_controls_in_prose(&state.goal)
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

fn pause(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    match loops::pause(ctx)? {
        loops::Paused::Now(state) => println!(
            "Paused Ralph loop {} at iteration {}/{}: Claude may stop now. Run it again with `ralph-hooks loop resume`.",
            state.id, state.iteration, state.max_iterations
        ),
        loops::Paused::Already(state) => println!(
            "Ralph loop {} is already PAUSED (iteration {}/{}). Run it again with `ralph-hooks loop resume`.",
            state.id, state.iteration, state.max_iterations
        ),
        loops::Paused::Nothing => println!("No running loop to pause."),
    }
    Ok(ExitCode::SUCCESS)
}

fn cancel(ctx: &Ctx) -> anyhow::Result<ExitCode> {
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
            if let Some(sentence) =
                crate::receipts::record::write_and_name(ctx, &state, "ralph-hooks")
            {
                println!("{sentence}");
            }
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
            println!(
                "Restart it with: {}",
                crate::util::text::escape_controls(&state.restart_command())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Before the user's own change to the loop or the task: the agent's Bash
/// calls that are over but never had their check are checked now, so the
/// change is not later taken for theirs (see
/// [`crate::guards::effects::settle_calls_over`]). What it finds goes to
/// stderr.
pub(super) fn settle_calls_over(ctx: &Ctx) {
    for line in crate::guards::effects::settle_calls_over(ctx) {
        eprintln!("{line}");
    }
}
