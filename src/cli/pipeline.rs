//! `ralph-hooks pipeline …`: the plan → run → sync pipeline behind `/ralph`,
//! `/ralph-resume` and `pipeline status` ([`crate::orchestrator::pipeline`]).
//!
//! ```text
//! pipeline start "<request>" [--branch[=NAME]] [--pr] [--plan-only]
//! pipeline next [<SPEC-ID>]
//! pipeline phase run|sync [<SPEC-ID>]
//! pipeline resume [<SPEC-ID>] [--from plan|run|sync] [--restart]
//! pipeline status [--json]
//! ```
//!
//! `next` and `phase` exit 0 when the pipeline moved on and 1 when it
//! stopped at a failed or missing phase result: either way stdout says what
//! happened and what to do.

use std::process::ExitCode;
use std::time::Duration;

use super::parser::Offered;
use crate::hook::ctx::Ctx;
use crate::orchestrator::pipeline;

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks pipeline start \"add rate limiting to the API\" --branch
  ralph-hooks pipeline next SPEC-12
  ralph-hooks pipeline resume SPEC-12 --from run
  ralph-hooks pipeline status --json";

#[derive(Debug, clap::Subcommand)]
pub enum PipelineCommand {
    /// Start a pipeline: the plan phase's prompt for a sub-agent
    Start {
        /// What to build, in words
        #[arg(value_name = "REQUEST")]
        request: Vec<String>,
        /// Work on a new branch: `--branch=NAME`, else feature/<SPEC-ID> (--pr always makes one)
        #[arg(long, value_name = "NAME", num_args = 0..=1, require_equals = true, default_missing_value = "")]
        branch: Option<String>,
        /// Open a pull request at the end
        #[arg(long)]
        pr: bool,
        /// Make the plan here and stop (what /ralph-plan does)
        #[arg(long)]
        plan_only: bool,
    },
    /// Check the phase's result: the next phase's prompt, or STOPPED (exit 1)
    Next {
        /// The pipeline (default: the only one running)
        #[arg(value_name = "SPEC-ID")]
        spec: Option<String>,
    },
    /// Run one phase by itself (run or sync); exit 1 when it cannot start
    Phase {
        /// run or sync
        #[arg(value_name = "PHASE")]
        phase: String,
        /// The pipeline (default: the only one running)
        #[arg(value_name = "SPEC-ID")]
        spec: Option<String>,
    },
    /// Continue an interrupted pipeline where it stopped
    Resume {
        /// The pipeline (default: the only one running)
        #[arg(value_name = "SPEC-ID")]
        spec: Option<String>,
        /// Start again from this phase
        #[arg(long, value_name = "PHASE", value_parser = Offered(&["plan", "run", "sync"]))]
        from: Option<String>,
        /// Start again from the beginning
        #[arg(long)]
        restart: bool,
    },
    /// Where each pipeline stands
    Status {
        /// The pipelines as JSON
        #[arg(long)]
        json: bool,
    },
}

/// How long the plan's test command may run when the run phase is checked.
const TEST_TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(ctx: &Ctx, command: PipelineCommand) -> anyhow::Result<ExitCode> {
    // The run phase is checked with the Ralph loop's own check runner.
    let verify = |command: &str| -> anyhow::Result<Option<String>> {
        let run = crate::ralph::checks::run(
            &ctx.project_root,
            command,
            TEST_TIMEOUT,
            &crate::ralph::checks::Walls::None,
        )?;
        Ok((!run.passed()).then(|| format!("{}\n{}", run.describe_status(), run.tail.trim_end())))
    };
    match command {
        PipelineCommand::Start {
            request,
            branch,
            pr,
            plan_only,
        } => {
            // `/ralph-plan`: the model makes the plan itself and stops there.
            let mode = if plan_only {
                pipeline::Mode::Yourself
            } else {
                pipeline::Mode::SubAgent
            };
            let branch = match branch {
                None => pipeline::Branch::Current,
                Some(name) if name.is_empty() => pipeline::Branch::New(None),
                Some(name) => pipeline::Branch::New(Some(name)),
            };
            let request = request.join(" ");
            print!("{}", pipeline::start(ctx, &request, branch, pr, mode)?);
            Ok(ExitCode::SUCCESS)
        }
        PipelineCommand::Phase { phase, spec } => {
            let (text, ready) = pipeline::single_phase(ctx, &phase, spec.as_deref(), &verify)?;
            print!("{text}");
            Ok(if ready {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        PipelineCommand::Next { spec } => {
            let (text, moved_on) = pipeline::advance(ctx, spec.as_deref(), &verify)?;
            print!("{text}");
            Ok(if moved_on {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        PipelineCommand::Resume {
            spec,
            from,
            restart,
        } => {
            print!(
                "{}",
                pipeline::resume(ctx, spec.as_deref(), from.as_deref(), restart, &verify)?
            );
            Ok(ExitCode::SUCCESS)
        }
        PipelineCommand::Status { json } => {
            let views = pipeline::views(ctx)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&serde_json::json!({ "pipelines": views }))?
                );
            } else if views.is_empty() {
                println!("No pipelines (start one with /ralph \"<request>\").");
            } else {
                for view in &views {
                    print!("{}", pipeline::describe(view));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
