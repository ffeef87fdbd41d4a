//! `ralph-hooks loop start|status|resume|cancel`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::bail;

use super::progress::{self, Progress};
use crate::engine::loop_check::{self, Scope};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::checks;
use crate::ralph::loop_state::{DEFAULT_MAX_ITERATIONS, LOOP_FILE, LoopState, LoopStatus};
use crate::ralph::loops::{self, StartRequest};

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
    /// Run a loop the user paused ("stop") again
    Resume,
    /// End the loop; its history is kept
    Cancel,
}

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
    match command {
        LoopCommand::Start(args) => start(ctx, args),
        LoopCommand::Status { json } => status(ctx, json),
        LoopCommand::Resume => resume(ctx),
        LoopCommand::Cancel => cancel(ctx),
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
    let no_diagnostics = args.no_diagnostics;
    let no_warnings = args.no_warnings;
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
        },
    )?;
    let mut text = format!(
        "Started Ralph loop {} (max {} iterations).\nGoal: {}\nIt ends when all of these hold:\n",
        state.id, state.max_iterations, state.goal
    );
    for line in state.condition_lines() {
        let _ = writeln!(text, "- {line}");
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
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "loop": state }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    match state {
        None => println!("No Ralph loop in {}.", ctx.state_root.display()),
        Some(state) => print!("{}", describe(&state)),
    }
    Ok(ExitCode::SUCCESS)
}

/// A person's view of a loop.
pub fn describe(state: &LoopState) -> String {
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
    if state.status == LoopStatus::Paused {
        let _ = writeln!(
            text,
            "  paused:     {} by the user — it blocks no stop; `ralph-hooks loop resume` (or /resume-loop) runs it again, `ralph-hooks loop cancel` ends it",
            state.paused_at.map(|t| t.to_rfc3339()).unwrap_or_default()
        );
    }
    if let Some(reason) = &state.completion_reason {
        let _ = writeln!(
            text,
            "  ended:      {} ({reason})",
            state.ended_at.map(|t| t.to_rfc3339()).unwrap_or_default()
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
            let _ = writeln!(
                text,
                "    #{:<3} {} {:<20} {failed}",
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
