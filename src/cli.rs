//! `ralph-hooks`, the command line that people and slash commands use.
//!
//! Exit status: 0 success; 1 the request was refused or failed, with a
//! message on stderr that says why and what to do. `--json` prints one JSON
//! object on stdout.
//!
//! The top layer with [`crate::events`]: it may use every feature part;
//! only `bin/ralph-hooks.rs` uses it.

mod check;
mod color;
mod command_files;
mod completions;
mod daemon;
mod doctor;
mod examples;
mod harness_install;
mod hook_commands;
pub mod install;
mod install_checks;
mod install_record;
mod intel;
mod loop_cmd;
mod monitor;
mod notify;
mod parser;
mod pipeline;
mod plugin_route;
mod progress;
mod receipts;
pub mod reference;
mod resume;
mod sandbox;
mod sandboxed;
mod settings_file;
mod status;
mod statusline;
mod stdin_args;
mod task;
mod telemetry;
mod uninstall;
mod validate;

use std::ffi::OsString;
use std::process::ExitCode;

use crate::hook::ctx::Ctx;
use color::Paint;
use parser::{Cli, Command, Parsed};

/// Every command and subcommand as the words that name it (`["task",
/// "step", "add"]`), parents before children: for tests that go through
/// each command's help.
pub fn command_paths() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            // `help`, and what only the hooks start (`guard-watch`).
            if sub.get_name() == "help" || sub.is_hide_set() {
                continue;
            }
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&parser::command(), &[], &mut out);
    out
}

/// The whole CLI as a process: parse, run, map errors to exit 1.
pub fn main() -> ExitCode {
    crate::state::journal::set_writer("ralph-hooks");
    // `doctor` and `daemon` start language servers; a Ctrl-C must not
    // leave them behind. Children are not tied to us with PDEATHSIG here:
    // `daemon run` is this binary too, and its servers outlive threads.
    crate::util::process::kill_children_on_signal(false);
    exit_quietly_on_closed_stdout();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match stdin_args::expand(args).and_then(run) {
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

/// One command line (without the program name) to its exit status. Help,
/// version and usage errors are printed by the parser; every other failure
/// comes back as an error for [`main`] to print on one line.
pub fn run(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    // The status line runs every few seconds: it skips building the
    // grammar of every command (see `statusline::plain_call`).
    if let Some(call) = statusline::plain_call(&args) {
        return statusline::run(call.project.as_deref(), call.debug);
    }
    let raw_args = args.clone();
    let cli = match parser::parse(args) {
        Parsed::Run(cli) => *cli,
        Parsed::Exit(code) => return Ok(code),
    };
    let Cli { global, command } = cli;
    let Some(command) = command else {
        // The parser answers a line without a command itself.
        return Ok(ExitCode::from(1));
    };
    let paint = Paint::new(color::enabled(
        global.color,
        |name| std::env::var_os(name),
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
    ));
    // Commands that need no project.
    match &command {
        Command::Statusline => return statusline::run(global.project.as_deref(), global.debug),
        Command::Completions(args) => return completions::run(args),
        _ => {}
    }
    // `monitor` takes `--project` once per watched project: those are its
    // own, not the project the CLI runs in.
    let project = match &command {
        Command::Monitor(_) => None,
        _ => global.project.as_deref().map(std::path::Path::new),
    };
    // Found as git and cargo find theirs: `.claude/` above, else the git
    // work tree's top; said on stderr when it is not the current directory.
    let (root, root_note) = crate::hook::ctx::cli_project_root(project)?;
    // A mistyped --project would get a state folder (and a loop no session
    // ever sees) in a new directory.
    if let Some(dir) = project {
        anyhow::ensure!(
            dir.is_dir(),
            "project directory {} does not exist",
            dir.display()
        );
    }
    if let Some(note) = root_note {
        eprintln!("{note}");
    }
    let mut ctx = Ctx::for_cli(Some(&root))?;
    ctx.debug |= global.debug;
    if let Command::GuardWatch = command {
        crate::guards::effects::watcher::run(&ctx)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(code) = sandboxed::gate(&ctx, &command, &raw_args) {
        return Ok(code);
    }
    if !matches!(command, Command::Daemon(_)) {
        crate::daemon::remote::announce_start();
    }
    let result = match command {
        Command::Loop(action) => loop_cmd::run(&ctx, action),
        Command::Verify(args) => receipts::run(&ctx, &args),
        Command::Check(args) => check::run(&ctx, &args, paint),
        Command::Refs(args) => intel::refs(&ctx, &args),
        Command::Rename(args) => intel::rename(&ctx, &args, paint),
        Command::Search(args) => intel::search(&ctx, &args),
        Command::Rewrite(args) => intel::rewrite(&ctx, &args, paint),
        Command::Fix(args) => intel::fix(&ctx, &args, paint),
        Command::Task(action) => task::run(&ctx, action),
        Command::Status(args) => status::run(&ctx, &args),
        Command::Validate(args) => validate::run(&ctx, &args),
        Command::Resume(action) => resume::run(&ctx, action),
        Command::Render(args) => resume::render(&ctx, &args),
        Command::Path(args) => resume::path(&ctx, &args),
        Command::Pipeline(action) => pipeline::run(&ctx, action),
        Command::Install(args) => match &args.harness {
            Some(harness) => harness_install::run(&ctx, harness, args.uninstall),
            None if args.uninstall => uninstall::run(&ctx, args.purge),
            None => install::run(&ctx, &args),
        },
        Command::Doctor => doctor::run(&ctx),
        Command::Daemon(args) => daemon::run(&ctx, &args),
        Command::Telemetry(args) => telemetry::run(&ctx, &args),
        Command::Monitor(args) => monitor::run(&ctx, args),
        Command::Notify(action) => notify::run(&ctx, &action),
        Command::Statusline | Command::Completions(_) | Command::GuardWatch => {
            unreachable!("handled above")
        }
    };
    // Whatever the command wrote (a loop, a lock, a daemon's files) stays
    // out of git, also in a project never installed into.
    if ctx.state_root.is_dir()
        && let Err(error) = ctx.store().ignore_in_git()
    {
        eprintln!("ralph-hooks: warning: {error:#}");
    }
    let code = result?;
    // A command that logged an event (loop start, a task step) starts the
    // telemetry exporter when telemetry is on, as a hook does.
    crate::telemetry::after_events(&ctx);
    // The store printed each warning on stderr as it happened; the CLI has
    // no second channel to repeat them on.
    drop(ctx.store().take_warnings());
    Ok(code)
}
