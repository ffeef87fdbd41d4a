//! `ralph-hooks check [PATH...] [--json] [--min-severity S] [--no-ast-grep]
//! [--budget SECS]`: every problem in the project from the language servers
//! and ast-grep, in one report. Exit 0 no errors, 1 errors found, 2 no
//! errors but something could not be checked (an inconclusive file, or a
//! path that does not exist).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

use super::Args;
use crate::diagnostics::model::Severity;
use crate::diagnostics::project::{self, NoSuchPath, Options};
use crate::diagnostics::settings::Settings;
use crate::hook::ctx::Ctx;

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let no_ast_grep = args.flag("--no-ast-grep");
    let min_severity = match args.value("--min-severity")? {
        None => Settings::load(ctx).config.min_severity,
        Some(word) => match parse_severity(&word) {
            Some(severity) => severity,
            None => {
                eprintln!("ralph-hooks: --min-severity {word:?}: use error, warning, info or hint");
                return Ok(ExitCode::from(2));
            }
        },
    };
    let budget = args.number::<u64>("--budget")?.map(Duration::from_secs);
    let paths: Vec<PathBuf> = args.rest().into_iter().map(PathBuf::from).collect();
    args.finish()?;
    if paths.iter().any(|p| p.as_os_str().is_empty()) {
        bail!("an empty path was given");
    }
    let options = Options {
        paths,
        min_severity,
        ast_grep: !no_ast_grep,
        budget,
    };
    let report = match project::check_project(ctx, &options) {
        Ok(report) => report,
        Err(NoSuchPath(path)) => {
            eprintln!("ralph-hooks: no such file or directory: {path}");
            return Ok(ExitCode::from(2));
        }
    };
    if json {
        println!("{}", serde_json::to_string(&report.to_json())?);
    } else {
        print!("{}", report.render_text());
    }
    Ok(ExitCode::from(report.exit_code()))
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
