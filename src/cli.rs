//! `ralph-hooks`, the command line that people and slash commands use.
//!
//! Exit status: 0 success; 1 the request was refused or failed, with a
//! message on stderr that says why and what to do. `--json` prints one JSON
//! object on stdout.
//!
//! The top layer with [`crate::events`]: it may use every feature part;
//! only `bin/ralph-hooks.rs` uses it.

mod args;
mod check;
mod daemon;
mod doctor;
pub mod install;
mod intel;
mod loop_cmd;
mod monitor;
mod notify;
mod pipeline;
mod resume;
mod status;
mod statusline;
mod task;
mod telemetry;
mod validate;

use std::process::ExitCode;

pub use args::Args;

use crate::hook::ctx::Ctx;

const USAGE: &str = "\
ralph-hooks — Claude Code hooks that keep the agent working until the work is done

Usage: ralph-hooks [--project DIR] [--debug] <command> …

Loop:
  loop start <goal> [--check CMD]... [--promise TEXT] [--max-iterations N]
                    [--check-timeout SECS] [--diagnostics|--no-diagnostics] [--no-warnings]
                    [--path P]...   (a goal alone: until the project has no errors)
                    [--max-tokens N] [--max-time DURATION] [--max-cost USD]   budgets
                    [--stop-when-stuck] [--rewake]
  loop status [--json]
  loop resume                          a paused loop (\"stop\", a usage limit) runs again
  loop cancel
  notify test|flush                    the webhook: send a test body | send what is queued
Check:
  check [PATH...] [--json] [--min-severity error|warning|info|hint] [--no-ast-grep] [--budget SECS]
                                       every LSP and ast-grep problem; exit 0 clean, 1 errors, 2 unchecked
Code:
  refs <file> <symbol|line:col> [--json]             every reference, via the language server
  rename <file> <symbol|line:col> <new> [--apply] [--json]   preview (diff) or all-or-nothing write
  search <pattern> [--lang L] [PATH...] [--json]     ast-grep pattern search ($VAR, $$$ARGS)
  rewrite <pattern> <replacement> [--lang L] [PATH...] [--apply] [--json]   dry-run diff unless --apply
  fix [PATH...] [--dry-run] [--json]                 LSP quick fixes, source.fixAll, ast-grep rule fixes
Tasks:
  task start <description> [--priority low|medium|high]
  task steps set <step> <step>...      task step add <text>
  task step start|complete|skip <step-id> [--note TEXT]
  task steps reorder <step-id>...      task progress <text>
  task complete [--force] [--summary TEXT]
  task status [--json]                 task list [--json]
  task block [--note TEXT]             task resume            task cancel [--note TEXT]
  status [--json]
  statusline                           one line for Claude Code's statusLine (JSON on stdin)
Orchestrator:
  validate <file>... [--json] [--as NAME]
  validate --schema NAME               path <relative>
  resume save|phase|list|show|retry …  render <template> --context <file|phase>...
  pipeline start|next|resume|status …  the plan → run → sync pipeline of /ralph
Setup:
  install [--project DIR] [--statusline] [--uninstall]
  doctor
  daemon [run [--prestart]|start|status [--json]|stop]   warm language servers for the hooks
  telemetry [status [--json]|run|stop]   OpenTelemetry export of events.jsonl (see README, Telemetry)
Monitor:
  monitor [--port 3847] [--bind 127.0.0.1] [--project [NAME=]DIR]... [--token TOKEN] [--open]

Environment: CLAUDE_PROJECT_DIR (project root), RALPH_HOOKS_STATE_DIR (state root,
default <project>/.claude/orchestrator), RALPH_HOOKS_DEBUG=1 (same as --debug).
";

/// The whole CLI as a process: parse, run, map errors to exit 1.
pub fn main() -> ExitCode {
    // `doctor` and `daemon` start language servers; a Ctrl-C must not
    // leave them behind. Children are not tied to us with PDEATHSIG here:
    // `daemon run` is this binary too, and its servers outlive threads.
    crate::util::process::kill_children_on_signal(false);
    exit_quietly_on_closed_stdout();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("ralph-hooks: {error:#}");
            ExitCode::from(1)
        }
    }
}

/// `ralph-hooks doctor | head -1`: once the reader is gone there is nobody
/// to tell, so a failed print to stdout ends the process with status 0 and
/// no message, as ripgrep does. (Rust ignores SIGPIPE and `println!`
/// panics on EPIPE; this hook catches exactly that panic, every other panic
/// goes to the default hook.)
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout")
            && message.contains(&format!("os error {}", libc::EPIPE))
        {
            std::process::exit(0);
        }
        default(info);
    }));
}

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let mut args = Args::new(args);
    // `monitor` takes `--project` once per watched project: leave them to it.
    let project = if args.peek_first() == Some("monitor") {
        None
    } else {
        args.value("--project")?
    };
    let debug = args.flag("--debug");
    if args.flag("--version") || args.flag("-V") {
        println!("ralph-hooks {}", env!("CARGO_PKG_VERSION"));
        return Ok(ExitCode::SUCCESS);
    }
    let Some(command) = args.positional() else {
        print!("{USAGE}");
        return Ok(if args.flag("--help") || args.flag("-h") {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    };
    if command == "help" || args.peek_flag("--help") || args.peek_flag("-h") {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    // The status line finds its project in the JSON on stdin.
    if command == "statusline" {
        return statusline::run(project.as_deref(), debug, &mut args);
    }
    let mut ctx = Ctx::for_cli(project.as_deref().map(std::path::Path::new))?;
    ctx.debug |= debug;
    let code = match command.as_str() {
        "loop" => loop_cmd::run(&ctx, &mut args)?,
        "check" => check::run(&ctx, &mut args)?,
        "refs" | "rename" | "search" | "rewrite" | "fix" => intel::run(&ctx, &command, &mut args)?,
        "task" => task::run(&ctx, &mut args)?,
        "status" => status::run(&ctx, &mut args)?,
        "validate" => validate::run(&ctx, &mut args)?,
        "resume" | "render" | "path" => resume::run(&ctx, &command, &mut args)?,
        "pipeline" => pipeline::run(&ctx, &mut args)?,
        "install" => install::run(&ctx, &mut args)?,
        "doctor" => doctor::run(&ctx, &mut args)?,
        "daemon" => daemon::run(&ctx, &mut args)?,
        "telemetry" => telemetry::run(&ctx, &mut args)?,
        "monitor" => monitor::run(&ctx, &mut args)?,
        "notify" => notify::run(&ctx, &mut args)?,
        other => anyhow::bail!("unknown command {other:?}: run `ralph-hooks --help` for the list"),
    };
    // A command that logged an event (loop start, a task step) starts the
    // telemetry exporter when telemetry is on, as a hook does.
    crate::telemetry::after_events(&ctx);
    // The store printed each warning on stderr as it happened; the CLI has
    // no second channel to repeat them on.
    drop(ctx.store().take_warnings());
    Ok(code)
}
