//! `ralph-hooks check [PATH...] [--json] [--min-severity S] [--no-ast-grep]
//! [--budget SECS]`: every problem in the project from the language servers
//! and ast-grep, in one report. Exit 0 no errors, 1 errors found, 2 no
//! errors but something could not be checked (an inconclusive file, files of
//! a language with no server, or a path that does not exist).
//!
//! The check runs in the daemon, with its warm servers (started when
//! needed), or in this process when the daemon is off or fails.
//! `--report-json` prints the report in the daemon's wire form: how a hook
//! that must not carry the check's code runs it in a child process.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

use super::color::Paint;
use super::parser::Offered;
use super::progress::{self, Progress};
use crate::daemon::wire::CheckReply;
use crate::engine::files::NoSuchPath;
use crate::engine::model::Severity;
use crate::engine::report::Report;
use crate::engine::run::{self, LocalServers, Options};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks check                          # the whole project
  ralph-hooks check src/ tests/test_api.py   # only these
  ralph-hooks check --min-severity error --json";

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Files and folders to check (default: the whole project)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// One JSON object: a summary and every file's problems
    #[arg(long)]
    pub json: bool,
    /// The least severe problems shown (default: the config's, else warning)
    #[arg(long, value_name = "SEVERITY", value_parser = Offered(&["error", "warning", "info", "hint"]))]
    pub min_severity: Option<String>,
    /// Leave out the ast-grep rules
    #[arg(long)]
    pub no_ast_grep: bool,
    /// Stop waiting for servers after this long; unanswered files are inconclusive
    #[arg(long, value_name = "SECS")]
    pub budget: Option<f64>,
    /// The report in the daemon's wire form (how a hook runs the check in a child)
    #[arg(long, hide = true)]
    pub report_json: bool,
}

pub fn run(ctx: &Ctx, args: &CheckArgs, paint: Paint) -> anyhow::Result<ExitCode> {
    let min_severity = match &args.min_severity {
        None => Settings::load(ctx).config.min_severity,
        Some(word) => match parse_severity(word) {
            Some(severity) => severity,
            None => {
                eprintln!("ralph-hooks: --min-severity {word:?}: use error, warning, info or hint");
                return Ok(ExitCode::from(2));
            }
        },
    };
    let budget = match args.budget {
        Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(secs) => bail!("--budget must be a positive number of seconds, got {secs}"),
        None => None,
    };
    if args.paths.iter().any(|p| p.as_os_str().is_empty()) {
        bail!("an empty path was given");
    }
    // A named path outside the project is the user's mistake, said plainly
    // (exit 2, unchecked), never walked.
    if let Err(error) = crate::engine::files::refuse_outside(ctx, &args.paths) {
        eprintln!("ralph-hooks: {error:#}");
        return Ok(ExitCode::from(2));
    }
    let options = Options {
        paths: args.paths.clone(),
        min_severity,
        ast_grep: !args.no_ast_grep,
        budget,
        caller_env: None,
    };
    let progress = Progress::start("checking", progress::wanted(args.json || args.report_json));
    let checked = check_with_progress(ctx, &options, &mut |done, total| progress.set(done, total));
    progress.finish();
    if args.report_json {
        let reply = match checked {
            Ok(report) => CheckReply::Report {
                report: Box::new(report),
                elapsed_ms: 0,
            },
            Err(NoSuchPath(path)) => CheckReply::NoSuchPath { path },
        };
        println!("{}", serde_json::to_string(&reply)?);
        return Ok(ExitCode::SUCCESS);
    }
    let report = match checked {
        Ok(report) => report,
        Err(NoSuchPath(path)) => {
            eprintln!("ralph-hooks: no such file or directory: {path}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", report.to_json_string()?);
    } else {
        print!("{}", paint.problems(&report.render_text()));
    }
    Ok(ExitCode::from(report.exit_code()))
}

/// A project check for the CLI, through the daemon, else in this process,
/// telling `progress` (files answered, files in all) as the
/// servers answer, wherever the check runs.
pub fn check_with_progress(
    ctx: &Ctx,
    options: &Options,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Report, NoSuchPath> {
    // The daemon's answer and the fallback both report, one after the other.
    let progress = std::cell::RefCell::new(progress);
    let mut in_daemon = |done: usize, total: usize| (progress.borrow_mut())(done, total);
    crate::daemon::project_check_with_progress(ctx, options, Some(&mut in_daemon), || {
        check_here(ctx, options, &mut |step| {
            (progress.borrow_mut())(step.done, step.total)
        })
    })
}

/// A project check with servers started in this process for it.
pub fn check_here(
    ctx: &Ctx,
    options: &Options,
    progress: &mut dyn FnMut(run::Progress),
) -> Result<Report, NoSuchPath> {
    let settings = Settings::load(ctx);
    let mut servers = LocalServers {
        grace: Duration::from_millis(settings.config.shutdown_grace_ms),
    };
    run::check_project(ctx, options, &mut servers, progress)
}

fn parse_severity(word: &str) -> Option<Severity> {
    match word.to_ascii_lowercase().as_str() {
        "error" | "errors" => Some(Severity::Error),
        "warning" | "warnings" => Some(Severity::Warning),
        "info" | "information" => Some(Severity::Info),
        "hint" | "hints" => Some(Severity::Hint),
        _ => None,
    }
}
