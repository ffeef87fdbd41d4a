//! `ralph-hooks validate <file>... [--json] [--as NAME]`: checks orchestrator
//! files against their schema and prints every violation as
//! `file:line:col: message`; exit 1 when there is any.
//!
//! `ralph-hooks validate --schema NAME` prints the outline of one schema
//! (`NAME` is a file name such as `test-result.yaml` or `T1.test-result.yaml`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::json;

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks validate .claude/orchestrator/contracts/T1.test-result.yaml
  ralph-hooks validate notes.yaml --as test-result.yaml --json
  ralph-hooks validate --schema phase-result   # the schema's outline";

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The files to check
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// The violations as JSON
    #[arg(long)]
    pub json: bool,
    /// Check every file against this schema (a file name such as test-result.yaml)
    #[arg(long = "as", value_name = "NAME")]
    pub as_schema: Option<String>,
    /// Print the outline of one schema instead
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}
use crate::hook::ctx::Ctx;
use crate::orchestrator::schema::tree::Pos;
use crate::orchestrator::schema::{self, Role, Violation};
use crate::util::fsread::{self, Links, limits};

pub fn run(ctx: &Ctx, args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let forced = args.as_schema.clone();
    let schema_name = args.schema.clone();
    let files = &args.files;
    if let Some(name) = schema_name {
        let role = role_named(&name)?;
        println!("# {}\n# {}", role.title(), role.schema_source());
        print!("{}", role.outline());
        return Ok(ExitCode::SUCCESS);
    }
    if files.is_empty() {
        bail!("usage: ralph-hooks validate <file>... [--json] [--as NAME]  (or --schema NAME)");
    }
    let forced_role = forced.as_deref().map(role_named).transpose()?;
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;

    let mut reports = Vec::new();
    for file in files {
        let path = absolute(&cwd, file);
        let role = forced_role.clone().or_else(|| {
            schema::recognize(&path, &ctx.state_root).or_else(|| schema::recognize_by_name(&path))
        });
        let violations = match &role {
            None => vec![Violation {
                pos: Pos::START,
                message: format!(
                    "not an orchestrator file: its name does not tell which schema applies (expected one of {}, or <taskId>.<kind>.yaml in a contracts directory); pass --as NAME",
                    schema::Kind::ALL
                        .iter()
                        .filter(|kind| **kind != schema::Kind::PreliminaryDesignBrief)
                        .map(|kind| kind.file_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }],
            Some(role) => {
                match fsread::read_text(&path, limits::DOCUMENT, Links::Follow).and_then(|text| {
                    text.ok_or_else(|| fsread::ReadError::Io {
                        path: path.clone(),
                        error: std::io::ErrorKind::NotFound.into(),
                    })
                }) {
                    Ok(text) => {
                        ctx.debug(format_args!(
                            "validating {} as {}",
                            path.display(),
                            role.title()
                        ));
                        schema::validate(role, &text)
                    }
                    Err(error) => vec![Violation {
                        pos: Pos::START,
                        message: format!("cannot read the file: {error}"),
                    }],
                }
            }
        };
        reports.push((file.as_str(), role, violations));
    }

    let n_violations: usize = reports.iter().map(|(_, _, v)| v.len()).sum();
    let n_bad_files = reports.iter().filter(|(_, _, v)| !v.is_empty()).count();
    if json {
        let files: Vec<_> = reports
            .iter()
            .map(|(file, role, violations)| {
                json!({
                    "file": file,
                    "schema": role.as_ref().map(Role::title),
                    "valid": violations.is_empty(),
                    "violations": violations.iter().map(|v| json!({
                        "line": v.pos.line,
                        "column": v.pos.col,
                        "message": v.message,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string(&json!({
                "valid": n_violations == 0,
                "n_files": reports.len(),
                "n_violations": n_violations,
                "files": files,
            }))?
        );
    } else {
        for (file, _, violations) in &reports {
            for violation in violations {
                println!("{}", schema::format_violation(file, violation));
            }
        }
        if n_violations == 0 {
            eprintln!("ralph-hooks: {} file(s) valid", reports.len());
        } else {
            eprintln!(
                "ralph-hooks: {n_violations} violation(s) in {n_bad_files} of {} file(s); regenerate them following their schema (`ralph-hooks validate --schema <name>` prints it)",
                reports.len()
            );
        }
    }
    Ok(if n_violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The schema for a file name (`test-result.yaml`, `T1.test-result.yaml`)
/// or a bare kind (`test-result`).
fn role_named(name: &str) -> anyhow::Result<Role> {
    let with_extension = if name.ends_with(".yaml") || name.ends_with(".json") {
        name.to_string()
    } else if name == "session" || name == "state" {
        format!("{name}.json")
    } else {
        format!("{name}.yaml")
    };
    match schema::recognize_by_name(Path::new(&with_extension)) {
        Some(mut role) => {
            // A name given by hand carries no ids to check against.
            role.ids = schema::PathIds::default();
            Ok(role)
        }
        None => bail!(
            "unknown schema {name:?}: use a file name such as state.json, test-result.yaml or T1.test-result.yaml"
        ),
    }
}

fn absolute(cwd: &Path, file: &str) -> PathBuf {
    let path = Path::new(file);
    if path.is_absolute() {
        schema::normalize(path)
    } else {
        schema::normalize(&cwd.join(path))
    }
}
