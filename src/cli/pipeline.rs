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

use anyhow::bail;

use super::Args;
use crate::hook::ctx::Ctx;
use crate::orchestrator::pipeline;

const USAGE: &str = "usage: ralph-hooks pipeline start \"<request>\" [--branch[=NAME]] [--pr] [--plan-only] | next [<SPEC-ID>] | phase run|sync [<SPEC-ID>] | resume [<SPEC-ID>] [--from plan|run|sync] [--restart] | status [--json]";

/// How long the plan's test command may run when the run phase is checked.
const TEST_TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    // The run phase is checked with the Ralph loop's own check runner.
    let verify = |command: &str| -> anyhow::Result<Option<String>> {
        let run = crate::ralph::checks::run(&ctx.project_root, command, TEST_TIMEOUT)?;
        Ok((!run.passed()).then(|| format!("{}\n{}", run.describe_status(), run.tail.trim_end())))
    };
    let Some(action) = args.positional() else {
        bail!("{USAGE}");
    };
    match action.as_str() {
        "start" => {
            let branch = match args.flag_with_value("--branch")? {
                None => pipeline::Branch::Current,
                Some(name) => pipeline::Branch::New(name),
            };
            let pr = args.flag("--pr");
            // `/ralph-plan`: the model makes the plan itself and stops there.
            let mode = if args.flag("--plan-only") {
                pipeline::Mode::Yourself
            } else {
                pipeline::Mode::SubAgent
            };
            let request = args.rest().join(" ");
            args.finish()?;
            print!("{}", pipeline::start(ctx, &request, branch, pr, mode)?);
            Ok(ExitCode::SUCCESS)
        }
        "phase" => {
            let Some(phase) = args.positional() else {
                bail!("{USAGE}");
            };
            let spec = args.positional();
            args.finish()?;
            let (text, ready) = pipeline::single_phase(ctx, &phase, spec.as_deref(), &verify)?;
            print!("{text}");
            Ok(if ready {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        "next" => {
            let spec = args.positional();
            args.finish()?;
            let (text, moved_on) = pipeline::advance(ctx, spec.as_deref(), &verify)?;
            print!("{text}");
            Ok(if moved_on {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        "resume" => {
            let from = args.value("--from")?;
            let restart = args.flag("--restart");
            let spec = args.positional();
            args.finish()?;
            print!(
                "{}",
                pipeline::resume(ctx, spec.as_deref(), from.as_deref(), restart, &verify)?
            );
            Ok(ExitCode::SUCCESS)
        }
        "status" => {
            let json = args.flag("--json");
            args.finish()?;
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
        other => bail!("unknown pipeline action {other:?}: {USAGE}"),
    }
}
