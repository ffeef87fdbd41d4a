//! `ralph-hooks verify RECEIPT` and `ralph-hooks loop receipt`: a finished
//! loop's completion receipt exported (signed when asked), and re-run on
//! its tree. The receipt's logic is [`crate::receipts`]; this file is the
//! command line around it and the diagnostics re-run (the project check).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use crate::engine::loop_check;
use crate::engine::model::Severity;
use crate::engine::run::Options;
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::loop_state::{LOOP_FILE, LoopState, record_counts};
use crate::receipts::statement::{RecordedDiagnostics, record_servers};
use crate::receipts::verify::{self, Rerun};
use crate::receipts::{envelope, record, servers};

pub const VERIFY_EXAMPLES: &str = "\
Exit status: 0 every condition re-run and reproduced, on a COMPLETED
receipt; 1 something differs, the receipt contradicts itself, or the
signature does not hold; 2 something could not be checked here (a check
not run, a server missing, the receipt unreadable); 3 nothing differs but
the receipt is no evidence of done (its loop FAILED or was CANCELLED, or
nothing in it could be re-run).

A receipt's check commands come from the receipt file: they run only when
a key in the allowed-signers file signed it, or with --run-unsigned.

Examples:
  ralph-hooks verify receipts/loop-20261125T101500Z-0001.json --run-unsigned
  ralph-hooks verify receipt.json --json --run-unsigned
  ralph-hooks verify receipt.json --allowed-signers .github/allowed_signers
  ralph-hooks verify receipts/fix.json --require-work --allowed-signers .github/allowed_signers";

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The receipt file (`ralph-hooks loop receipt --out FILE` writes one)
    #[arg(value_name = "RECEIPT")]
    pub receipt: PathBuf,
    /// One JSON object: the tree, the signature and each condition's outcome
    #[arg(long)]
    pub json: bool,
    /// Require a signature by a key in this ssh allowed-signers file
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Run the check commands of a receipt no allowed signer signed (they
    /// come from the file: read them first)
    #[arg(long)]
    pub run_unsigned: bool,
    /// The receipt's tree must be the work here as it is now (less the
    /// receipt file), not any tree in the history: a pull request's head
    #[arg(long)]
    pub require_work: bool,
}

/// The `receipts` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ReceiptsConfig {
    /// An SSH key (`~/` is the home folder) every exported receipt is
    /// signed with, as `loop receipt --sign-with` does.
    #[serde(default)]
    pub sign_with: Option<String>,
    /// The allowed-signers file `verify` checks signatures against.
    #[serde(default)]
    pub allowed_signers: Option<String>,
}

impl ReceiptsConfig {
    fn load(ctx: &Ctx) -> ReceiptsConfig {
        ctx.config().section("receipts").unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: ignoring the `receipts` config section: {error:#}");
            ReceiptsConfig::default()
        })
    }
}

/// `~/x` → the home folder's `x`.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// `loop receipt [LOOP-ID] [--out FILE] [--sign-with KEY]`.
pub fn export(
    ctx: &Ctx,
    id: Option<String>,
    out: Option<PathBuf>,
    sign_with: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let id = match id {
        Some(id) => id,
        None => {
            let Some(state) = ctx.store().read_json::<LoopState>(LOOP_FILE)? else {
                bail!(
                    "no loop here: give a LOOP-ID (`ls {}/receipts`)",
                    ctx.state_root.display()
                );
            };
            if state.is_active() {
                bail!(
                    "loop {} is {}: its receipt is written when it ends",
                    state.id,
                    state.status.as_str()
                );
            }
            state.id
        }
    };
    let relative = record::relative_path(&id)?;
    let Some(text) = ctx.store().read_text(&relative)? else {
        bail!(
            "no receipt for loop {id} in {} (loops that ended before receipts existed have none)",
            ctx.state_root.display()
        );
    };
    // Only a receipt is exported, and only a receipt is signed: a file that
    // is not one is moved aside as corrupt and reported.
    let parsed = serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|error| format!("not JSON: {error}"))
        .and_then(|value| crate::receipts::statement::parse(&value));
    if let Err(why) = parsed {
        let path = ctx.store().path(&relative);
        let aside = path.with_extension(format!(
            "corrupt-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ));
        let moved = match std::fs::rename(&path, &aside) {
            Ok(()) => format!("moved aside to {}", aside.display()),
            Err(error) => format!("could not be moved aside: {error}"),
        };
        bail!(
            "{} is not a receipt ({}); {}",
            crate::util::text::escape_controls(&path.to_string_lossy()),
            crate::util::text::escape_controls(&why),
            crate::util::text::escape_controls(&moved)
        );
    }
    let key = sign_with.or_else(|| {
        ReceiptsConfig::load(ctx)
            .sign_with
            .map(|key| expand_home(&key))
    });
    let text = match key {
        None => text,
        Some(key) => {
            let envelope = envelope::sign(text.as_bytes(), &key)?;
            format!("{}\n", serde_json::to_string_pretty(&envelope)?)
        }
    };
    match out {
        None => print!("{text}"),
        Some(path) => {
            std::fs::write(&path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "Wrote the receipt of loop {id} to {}.",
                crate::util::text::escape_controls(&path.to_string_lossy())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `verify RECEIPT [--json] [--allowed-signers FILE] [--run-unsigned]
/// [--require-work]`.
pub fn run(ctx: &Ctx, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    match verify_receipt(ctx, args) {
        Ok(code) => Ok(code),
        // A fault before or while the conditions ran (an unreadable
        // receipt, a repository verify cannot write its commit to) is
        // "cannot be checked here", never "differs".
        Err(error) => {
            let why = format!("{error:#}");
            if args.json {
                println!("{}", serde_json::json!({"error": why, "exitCode": 2}));
            } else {
                eprintln!(
                    "ralph-hooks: cannot check {}: {}",
                    crate::util::text::escape_controls(&args.receipt.to_string_lossy()),
                    crate::util::text::escape_controls(&why)
                );
            }
            Ok(ExitCode::from(verify::EXIT_CANNOT_CHECK))
        }
    }
}

/// SIGINT, SIGTERM or SIGHUP during verify: the check is killed, the
/// temporary worktree removed, and the process ends as the signal would
/// have ended it (128 + its number).
fn on_signal(signal: libc::c_int) {
    verify::remove_after_signal();
    eprintln!("ralph-hooks: verify interrupted; its temporary checkout is removed");
    std::process::exit(128 + signal);
}

fn verify_receipt(ctx: &Ctx, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    crate::util::process::handle_fatal_signals(on_signal);
    let text = std::fs::read_to_string(&args.receipt).with_context(|| {
        format!(
            "cannot read {}",
            crate::util::text::escape_controls(&args.receipt.to_string_lossy())
        )
    })?;
    // The config's path is the project's (it is in the project's config);
    // the command line's is the caller's.
    let allowed = args.allowed_signers.clone().or_else(|| {
        ReceiptsConfig::load(ctx).allowed_signers.map(|path| {
            let path = expand_home(&path);
            if path.is_absolute() {
                path
            } else {
                ctx.project_root.join(path)
            }
        })
    });
    if let Some(allowed) = &allowed
        && let Err(error) = std::fs::File::open(allowed)
    {
        bail!(
            "the allowed-signers file {} cannot be read ({error}): the signature cannot be checked",
            allowed.display()
        );
    }
    let (receipt, signature, signed_by_allowed) = match verify::load(&text, allowed.as_deref()) {
        Ok(loaded) => loaded,
        Err(why) => {
            if args.json {
                println!("{}", serde_json::json!({"refused": why, "exitCode": 1}));
            } else {
                eprintln!(
                    "ralph-hooks: refusing {}: {}",
                    crate::util::text::escape_controls(&args.receipt.to_string_lossy()),
                    crate::util::text::escape_controls(&why)
                );
            }
            return Ok(ExitCode::from(verify::EXIT_DIFFERS));
        }
    };
    let commands: Vec<&str> = receipt
        .conditions
        .iter()
        .filter_map(|condition| match condition {
            crate::receipts::statement::Condition::Command {
                command,
                run: Some(_),
            } => Some(command.as_str()),
            _ => None,
        })
        .collect();
    let run_commands = signed_by_allowed || args.run_unsigned;
    if !signed_by_allowed && !commands.is_empty() {
        // Said before anything runs, on stderr (stdout may be --json).
        eprintln!(
            "ralph-hooks: this receipt is not signed by a key in an allowed-signers file; its check commands come from the file, not from this repository:"
        );
        for command in &commands {
            eprintln!("  {}", crate::util::text::escape_controls(command));
        }
        if run_commands {
            eprintln!(
                "ralph-hooks: running them (--run-unsigned), in a temporary checkout, as you."
            );
        } else {
            eprintln!(
                "ralph-hooks: not running them: pass --run-unsigned to run them as you, or --allowed-signers FILE for a signed receipt."
            );
        }
    }
    // Left out of the work's tree: this installation's state folder (not
    // whatever the receipt lists) and the receipt file when it is in the
    // work (committed beside it).
    let mut excluded = record::excluded_paths(&ctx.project_root, &ctx.state_root);
    excluded.extend(std::fs::canonicalize(&args.receipt).ok().and_then(|path| {
        let root = std::fs::canonicalize(&ctx.project_root).ok()?;
        Some(path.strip_prefix(root).ok()?.to_string_lossy().into_owned())
    }));
    let options = verify::Options {
        run_commands,
        require_work: args.require_work,
        excluded,
    };
    let report = verify::verify(
        &ctx.project_root,
        &receipt,
        &options,
        signature,
        &mut diagnose,
    );
    verify::stop_if_interrupted();
    let report = report?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.to_text());
    }
    Ok(ExitCode::from(report.exit_code()))
}

/// The diagnostics condition computed again in `project` (a checkout of the
/// receipt's tree): the same scope, servers started here for it.
fn diagnose(project: &Path, recorded: &RecordedDiagnostics) -> anyhow::Result<Rerun> {
    let ctx = Ctx::for_cli(Some(project))?;
    let touched = recorded.scope == "touched";
    let wanted = if touched {
        &recorded.files
    } else {
        &recorded.paths
    };
    let paths: Vec<PathBuf> = wanted.iter().map(|path| project.join(path)).collect();
    if touched && paths.iter().all(|path| !path.is_file()) {
        // As at the Stop: no touched file left, nothing to check.
        return Ok(Rerun {
            holds: true,
            ..Rerun::default()
        });
    }
    let settings = Settings::load(&ctx);
    let options = Options {
        paths,
        min_severity: Severity::Warning,
        ast_grep: true,
        budget: None,
        caller_env: None,
    };
    let report = super::check::check_here(&ctx, &options, &mut |_| {})
        .map_err(|missing| anyhow::anyhow!("{} is not in the tree", missing.0))?;
    let outcome = loop_check::outcome(
        &report,
        "",
        &[],
        recorded.no_warnings,
        loop_check::caps(&settings),
        touched,
    );
    let (errors, warnings) = record_counts(&outcome.record);
    let names = record_servers(&outcome.record);
    let strings = |key: &str| -> Vec<String> {
        outcome.record[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .map(str::to_string)
            .collect()
    };
    Ok(Rerun {
        errors,
        warnings,
        holds: outcome.holds,
        servers: servers::versions(project, ctx.config(), &names),
        unchecked: strings("unchecked"),
        inconclusive: strings("inconclusive"),
    })
}
