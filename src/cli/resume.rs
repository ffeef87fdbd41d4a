//! `ralph-hooks resume|render|path`: saving and resuming
//! interrupted multi-phase commands, rendering prompt templates from phase
//! results, and turning relative paths into checked absolute ones.
//!
//! ```text
//! resume save <command> <spec-id> --phase PHASE [--completed STEP,...] [--pending STEP,...] [--context KEY=VALUE]...
//! resume phase <phase> [--status completed|error|interrupted] [--output KEY=VALUE]... [--output-path KEY=PATH]... [--file PATH]... [--next PHASE]
//! resume list [--json]
//! resume retry <backup.json>
//! resume show <command> [<spec-id>] [--from STEP] [--restart]
//! render <template|-> --context <phase-result.json|phase>...
//! path <relative>
//! ```

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use chrono::Duration;
use serde_json::{Map, Value, json};

use super::parser::Offered;
use crate::hook::ctx::Ctx;
use crate::orchestrator::resume::{self, EXPIRY_DAYS, PhaseResult, ResumeState, ShowOptions};
use crate::orchestrator::templates::{self, Variables};
use crate::util::fsread::{self, Links, limits};

pub const RESUME_EXAMPLES: &str = "\
Examples:
  ralph-hooks resume save implement SPEC-12 --phase run --completed plan --pending run,sync
  ralph-hooks resume phase plan --output PLAN_FILE=plan.md --next run
  ralph-hooks resume show implement SPEC-12 --from run
  ralph-hooks resume list --json";

pub const RENDER_EXAMPLES: &str = "\
Examples:
  ralph-hooks render prompts/run.md --context plan
  cat prompt.md | ralph-hooks render - --context phase-result.json";

pub const PATH_EXAMPLES: &str = "\
Examples:
  ralph-hooks path tasks          # <state root>/tasks, checked
  ralph-hooks path contracts/T1.test-result.yaml";

#[derive(Debug, clap::Subcommand)]
pub enum ResumeCommand {
    /// Save where a multi-phase command is, to continue it later
    Save {
        /// The command being run (e.g. implement)
        command: String,
        /// The spec it works on
        #[arg(value_name = "SPEC-ID")]
        spec_id: String,
        /// The phase it is in
        #[arg(long, value_name = "PHASE")]
        phase: Option<String>,
        /// Steps done, comma-separated; repeatable
        #[arg(long, value_name = "STEP,...")]
        completed: Vec<String>,
        /// Steps still to do, comma-separated; repeatable
        #[arg(long, value_name = "STEP,...")]
        pending: Vec<String>,
        /// Anything the rest of the command needs (JSON values stay JSON); repeatable
        #[arg(long, value_name = "KEY=VALUE", allow_hyphen_values = true)]
        context: Vec<String>,
    },
    /// Record a phase's result for the next phase
    Phase {
        /// The phase that ran
        phase: String,
        /// How it ended
        #[arg(long, default_value = "completed", value_parser = Offered(&["completed", "error", "interrupted"]))]
        status: String,
        /// A result for the next phase (JSON values stay JSON); repeatable
        #[arg(long, value_name = "KEY=VALUE", allow_hyphen_values = true)]
        output: Vec<String>,
        /// A path for the next phase, made absolute and checked; repeatable
        #[arg(long, value_name = "KEY=PATH")]
        output_path: Vec<String>,
        /// A file the phase created; repeatable
        #[arg(long, value_name = "PATH")]
        file: Vec<String>,
        /// The phase that comes next
        #[arg(long, value_name = "PHASE")]
        next: Option<String>,
    },
    /// Saved commands and phase results that can be resumed
    List {
        /// As JSON
        #[arg(long)]
        json: bool,
    },
    /// The prompt that continues a saved command
    Show {
        /// The saved command
        command: String,
        /// Which of its specs (default: the latest)
        #[arg(value_name = "SPEC-ID")]
        spec: Option<String>,
        /// Continue from this step instead
        #[arg(long, value_name = "STEP")]
        from: Option<String>,
        /// Ignore the saved progress and start again
        #[arg(long)]
        restart: bool,
    },
    /// Save again a state whose save failed (from its backup file)
    Retry {
        /// The backup file the failed save named
        #[arg(value_name = "BACKUP.json")]
        backup: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The template file, or - for stdin
    #[arg(value_name = "TEMPLATE|-")]
    pub template: String,
    /// A phase-result file, or a phase whose latest result is meant; repeatable
    #[arg(long, value_name = "FILE|PHASE")]
    pub context: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct PathArgs {
    /// A path relative to the state root
    pub relative: String,
}

pub fn run(ctx: &Ctx, command: ResumeCommand) -> anyhow::Result<ExitCode> {
    match command {
        ResumeCommand::Save {
            command,
            spec_id,
            phase,
            completed,
            pending,
            context,
        } => save(ctx, command, spec_id, phase, &completed, &pending, &context),
        ResumeCommand::Phase {
            phase: name,
            status,
            output,
            output_path,
            file,
            next,
        } => phase(ctx, name, status, &output, output_path, file, next),
        ResumeCommand::List { json } => list(ctx, json),
        ResumeCommand::Show {
            command,
            spec,
            from,
            restart,
        } => show(ctx, command, spec, from, restart),
        ResumeCommand::Retry { backup } => retry(ctx, &backup),
    }
}

/// `--completed a,b --completed c` → `[a, b, c]`.
fn step_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|step| !step.is_empty())
        .map(str::to_string)
        .collect()
}

/// `KEY=VALUE` pairs; a VALUE that parses as JSON is kept as JSON
/// (`["python","fastapi"]`, `3`), anything else is text.
fn key_values(pairs: &[String], name: &str) -> anyhow::Result<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("{name} takes KEY=VALUE, got {pair:?}");
        };
        if key.is_empty() {
            bail!("{name} {pair:?} has an empty key");
        }
        let parsed = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        map.insert(key.to_string(), parsed);
    }
    Ok(map)
}

fn save(
    ctx: &Ctx,
    command: String,
    spec_id: String,
    phase: Option<String>,
    completed: &[String],
    pending: &[String],
    context: &[String],
) -> anyhow::Result<ExitCode> {
    let completed_steps = step_list(completed);
    let pending_steps = step_list(pending);
    let mut context = key_values(context, "--context")?;
    let Some(current_phase) = phase else {
        bail!("resume save needs --phase PHASE: the phase the command is in");
    };
    // REQ-1.3: resuming checks these against the repository.
    crate::orchestrator::repo::record(&ctx.project_root, &mut context);
    let state = ResumeState {
        command,
        spec_id,
        current_phase,
        completed_steps,
        pending_steps,
        timestamp: ctx.now(),
        expiry: ctx.now() + Duration::days(EXPIRY_DAYS),
        context,
    };
    let saved = resume::save_state(ctx, &state)?;
    println!(
        "Saved the resume state of {} {} to {} (valid until {}).",
        state.command,
        state.spec_id,
        saved.relative,
        resume::rfc3339(state.valid_until())
    );
    for old in &saved.replaced {
        println!("Replaced the older state {old}.");
    }
    Ok(ExitCode::SUCCESS)
}

fn phase(
    ctx: &Ctx,
    phase: String,
    status: String,
    outputs: &[String],
    path_outputs: Vec<String>,
    files: Vec<String>,
    next_phase: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut outputs = key_values(outputs, "--output")?;
    if !matches!(status.as_str(), "completed" | "error" | "interrupted") {
        bail!("--status must be completed, error or interrupted, got {status:?}");
    }
    // REQ-1.2: a path handed on to the next phase is absolute and checked.
    for pair in &path_outputs {
        let Some((key, path)) = pair.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            bail!("--output-path takes KEY=PATH, got {pair:?}");
        };
        let absolute =
            templates::resolve_path(ctx, path).with_context(|| format!("--output-path {key}"))?;
        outputs.insert(
            key.to_string(),
            Value::String(absolute.display().to_string()),
        );
    }
    let files_created = files
        .iter()
        .map(|file| templates::resolve_path(ctx, file).map(|p| p.display().to_string()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let result = PhaseResult {
        phase,
        timestamp: ctx.now(),
        status,
        outputs,
        files_created,
        next_phase,
    };
    let relative = resume::save_phase(ctx, &result)?;
    println!("Saved the result of phase {} to {relative}.", result.phase);
    print!("{}", next_phase_guidance(&result));
    Ok(ExitCode::SUCCESS)
}

/// REQ-2.1: what to do after a phase, with the exact commands.
pub fn next_phase_guidance(result: &PhaseResult) -> String {
    let phase = &result.phase;
    if result.status != "completed" {
        return format!(
            "Phase {phase} did not complete ({}): the next phase must not start. Fix what failed and run phase {phase} again; a saved multi-phase command continues with `ralph-hooks resume show <command>` (or `--from <step>`, `--restart`).\n",
            result.status
        );
    }
    let Some(next) = &result.next_phase else {
        return format!("Phase {phase} was the last one (no --next): nothing follows.\n");
    };
    let mut names: Vec<String> = result
        .outputs
        .keys()
        .map(|key| format!("{{{{{}}}}}", templates::variable_name(key)))
        .collect();
    names.extend(["{{FILES_CREATED}}", "{{NEXT_PHASE}}"].map(String::from));
    format!(
        "Next phase: {next}. Hand it this phase's results explicitly, never as \"mentioned above\": render its prompt with `ralph-hooks render <template> --context {phase}`, which fills {}.\n",
        names.join(", ")
    )
}

fn retry(ctx: &Ctx, backup: &str) -> anyhow::Result<ExitCode> {
    let relative = resume::retry(ctx, Path::new(backup))?;
    println!("Saved {relative} from the backup {backup} (the backup is removed).");
    Ok(ExitCode::SUCCESS)
}

fn list(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
    let resume::Resumable {
        live: states,
        invalidated: warnings,
    } = resume::resumable(ctx)?;
    for warning in &warnings {
        eprintln!("ralph-hooks: warning: {warning}");
    }
    let phases: Vec<(String, PhaseResult)> = resume::load_all(ctx)?
        .into_iter()
        .filter_map(|(name, entry)| match entry {
            resume::Entry::Phase(result) => Some((name, result)),
            resume::Entry::Resume(_) => None,
        })
        .collect();
    if json {
        let output = json!({
            "resumable": states.iter().map(|(file, state)| {
                let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
                value["file"] = Value::String(file.clone());
                value
            }).collect::<Vec<_>>(),
            "phase_results": phases.iter().map(|(file, result)| {
                let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
                value["file"] = Value::String(file.clone());
                value
            }).collect::<Vec<_>>(),
            "invalidated": warnings,
        });
        println!("{}", serde_json::to_string(&output)?);
        return Ok(ExitCode::SUCCESS);
    }
    if states.is_empty() {
        println!("No resumable commands.");
    } else {
        println!("Resumable commands:");
        for (file, state) in &states {
            println!("- {} ({file})", resume::describe(state));
        }
    }
    if !phases.is_empty() {
        println!("Phase results:");
        for (file, result) in &phases {
            let next = result
                .next_phase
                .as_deref()
                .map(|next| format!(", next {next}"))
                .unwrap_or_default();
            println!(
                "- {} {} at {}{next} ({file})",
                result.phase,
                result.status,
                resume::rfc3339(result.timestamp)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(
    ctx: &Ctx,
    command: String,
    spec: Option<String>,
    from: Option<String>,
    restart: bool,
) -> anyhow::Result<ExitCode> {
    if from.is_some() && restart {
        bail!("--from and --restart contradict each other: give one");
    }
    let (relative, state) = resume::find(ctx, &command, spec.as_deref())?;
    // REQ-1.3: a state whose branch or commit no longer matches cannot be
    // continued as if nothing happened; --restart ignores the progress.
    let conflicts = crate::orchestrator::repo::check(&ctx.project_root, &state.context);
    if !conflicts.is_empty() && !restart {
        bail!(
            "cannot resume {} {}: {}; or start it again with --restart",
            state.command,
            state.spec_id,
            conflicts.join("; ")
        );
    }
    ctx.debug(format_args!(
        "Loading context from {}",
        ctx.store().path(&relative).display()
    ));
    let prompt = resume::continuation_prompt(&state, &ShowOptions { from, restart })?;
    println!("{prompt}");
    Ok(ExitCode::SUCCESS)
}

pub fn render(ctx: &Ctx, args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let contexts = &args.context;
    let template_arg = &args.template;
    let template = if template_arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the template from stdin")?;
        text
    } else {
        fsread::read_text(Path::new(&template_arg), limits::DOCUMENT, Links::Follow)?
            .with_context(|| format!("the template {template_arg} does not exist"))?
    };
    let mut variables = Variables::default();
    for context in contexts {
        let (path, value) = load_context(ctx, context)?;
        ctx.debug(format_args!("Loading context from {path}"));
        variables.add_outputs(ctx, &path, &value)?;
    }
    let text = templates::render(ctx, &template, &variables)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// A `--context` is a phase-result file, or the name of a phase whose latest
/// result in `command-state/` is meant.
fn load_context(ctx: &Ctx, context: &str) -> anyhow::Result<(String, Value)> {
    let as_file = Path::new(context);
    if as_file.is_file() {
        let text = fsread::read_text(as_file, limits::DOCUMENT, Links::Follow)?
            .with_context(|| format!("the context {context} does not exist"))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("the context {context} is not JSON"))?;
        return Ok((context.to_string(), value));
    }
    if crate::state::ids::is_valid(context)
        && let Some((relative, result)) = resume::latest_phase(ctx, context)?
    {
        let path = ctx.store().path(&relative).display().to_string();
        return Ok((path, serde_json::to_value(result)?));
    }
    bail!(
        "context {context:?} is neither a file nor a phase with a saved result in {}",
        ctx.store().path(resume::DIR).display()
    )
}

pub fn path(ctx: &Ctx, args: &PathArgs) -> anyhow::Result<ExitCode> {
    let relative = &args.relative;
    println!("{}", templates::resolve_path(ctx, relative)?.display());
    Ok(ExitCode::SUCCESS)
}
