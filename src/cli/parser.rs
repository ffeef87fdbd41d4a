//! The command line's grammar, on clap (derive): the commands, the options
//! every command takes, the top-level help grouped by what the commands are
//! for, and clap's errors turned into the CLI's one-line messages with a
//! "did you mean …" where clap found a near spelling.
//!
//! Each command's own arguments live beside its code (`check::CheckArgs`,
//! `loop_cmd::LoopCommand`, …); this file only puts them together.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory as _, Parser, Subcommand};

use super::color::ColorWhen;
use super::{
    check, completions, daemon, install, intel, loop_cmd, monitor, notify, pipeline, receipts,
    resume, status, task, telemetry, validate,
};

const ABOUT: &str =
    "ralph-hooks — Claude Code hooks that keep the agent working until the work is done";

const AFTER_HELP: &str = "\
Run `ralph-hooks <command> --help` for what a command takes, with examples.

Environment: CLAUDE_PROJECT_DIR (project root), RALPH_HOOKS_STATE_DIR (state root,
default <project>/.claude/orchestrator), RALPH_HOOKS_DEBUG=1 (same as --debug),
NO_COLOR / CLICOLOR_FORCE (colour off / on, unless --color says otherwise).";

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "ralph-hooks",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    max_term_width = 100,
    disable_help_subcommand = false
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The grammar as derived, before the subcommands' examples are added.
    #[cfg(test)]
    pub fn command_without_examples() -> clap::Command {
        Cli::command()
    }
}

/// Options every command takes, before or after its name.
#[derive(Debug, Args)]
pub struct Global {
    /// The project (default: $CLAUDE_PROJECT_DIR, else the nearest folder at or above the current one with a .claude/ folder, else the top of its git work tree, else the current directory)
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub project: Option<String>,
    /// Say on stderr what was decided and why
    #[arg(long, global = true, help_heading = "Global options")]
    pub debug: bool,
    /// Colour on stdout: auto (a terminal, unless NO_COLOR is set), always or never
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = "Global options"
    )]
    pub color: ColorWhen,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Claude until the goal holds: start, status, resume or cancel a Ralph loop
    #[command(subcommand, after_help = loop_cmd::EXAMPLES)]
    Loop(loop_cmd::LoopCommand),
    /// Re-run a finished loop's receipt on its git tree: reproduced, differs or cannot be checked
    #[command(after_help = receipts::VERIFY_EXAMPLES)]
    Verify(receipts::VerifyArgs),
    /// Every LSP and ast-grep problem in the project; exit 0 clean, 1 errors, 2 unchecked
    #[command(after_help = check::EXAMPLES)]
    Check(check::CheckArgs),
    /// Every reference to a symbol, through the file's language server
    #[command(after_help = intel::REFS_EXAMPLES)]
    Refs(intel::RefsArgs),
    /// Rename a symbol in every file: a diff preview, or all-or-nothing with --apply
    #[command(after_help = intel::RENAME_EXAMPLES)]
    Rename(intel::RenameArgs),
    /// Find code by an ast-grep pattern ($VAR one node, $$$ARGS any number)
    #[command(after_help = intel::SEARCH_EXAMPLES)]
    Search(intel::SearchArgs),
    /// Rewrite code matching an ast-grep pattern: a diff, or written with --apply
    #[command(after_help = intel::REWRITE_EXAMPLES)]
    Rewrite(intel::RewriteArgs),
    /// Apply LSP quick fixes, source.fixAll and ast-grep rule fixes
    #[command(after_help = intel::FIX_EXAMPLES)]
    Fix(intel::FixArgs),
    /// Tasks and their steps: what Claude works through, one step at a time
    #[command(subcommand, after_help = task::EXAMPLES)]
    Task(task::TaskCommand),
    /// The loop, the active task and the monitor at a glance
    #[command(after_help = status::EXAMPLES)]
    Status(status::StatusArgs),
    /// One line for Claude Code's statusLine (reads its JSON on stdin)
    #[command(after_help = STATUSLINE_EXAMPLES)]
    Statusline,
    /// Check orchestrator files against their schema; exit 1 on any violation
    #[command(after_help = validate::EXAMPLES)]
    Validate(validate::ValidateArgs),
    /// Save and resume interrupted multi-phase commands
    #[command(subcommand, after_help = resume::RESUME_EXAMPLES)]
    Resume(resume::ResumeCommand),
    /// Fill a prompt template from phase results
    #[command(after_help = resume::RENDER_EXAMPLES)]
    Render(resume::RenderArgs),
    /// A path under the state root, checked and absolute
    #[command(after_help = resume::PATH_EXAMPLES)]
    Path(resume::PathArgs),
    /// The plan → run → sync pipeline behind /ralph
    #[command(subcommand, after_help = pipeline::EXAMPLES)]
    Pipeline(pipeline::PipelineCommand),
    /// Register the hooks and slash commands in a project's .claude/
    #[command(after_help = install::EXAMPLES)]
    Install(install::InstallArgs),
    /// What is installed, where, and whether it is wired up
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor,
    /// The daemon that keeps language servers warm for the hooks
    #[command(after_help = daemon::EXAMPLES)]
    Daemon(daemon::DaemonArgs),
    /// The webhook notifications: send a test body, or what the hooks queued
    #[command(subcommand, after_help = notify::EXAMPLES)]
    Notify(notify::NotifyCommand),
    /// OpenTelemetry export of events.jsonl: status, run or stop the exporter
    #[command(after_help = telemetry::EXAMPLES)]
    Telemetry(telemetry::TelemetryArgs),
    /// Serve the dashboard and the REST/live API over the projects' state
    #[command(after_help = monitor::EXAMPLES)]
    Monitor(monitor::MonitorArgs),
    /// Print a shell completion script for bash, zsh or fish
    #[command(after_help = completions::EXAMPLES)]
    Completions(completions::CompletionsArgs),
    /// The guard's watcher for late writes, started by the hooks (not for people)
    #[command(hide = true)]
    GuardWatch,
}

const STATUSLINE_EXAMPLES: &str = "\
Examples:
  echo '{\"session_id\": \"abc\"}' | ralph-hooks statusline
  echo '{\"session_id\": \"abc\"}' | ralph-hooks statusline --debug   # says why when it prints nothing
  ralph-hooks install --project . --statusline   # sets it as Claude Code's status line";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  ralph-hooks doctor
  ralph-hooks doctor --project ../api";

/// The top-level help's sections, as the commands are used. Every command
/// is in exactly one (a unit test holds that).
pub(super) const GROUPS: &[(&str, &[&str])] = &[
    ("Loop", &["loop", "verify", "notify"]),
    ("Check", &["check"]),
    ("Code", &["refs", "rename", "search", "rewrite", "fix"]),
    ("Tasks", &["task", "status", "statusline"]),
    (
        "Orchestrator",
        &["validate", "resume", "render", "path", "pipeline"],
    ),
    (
        "Setup",
        &["install", "doctor", "daemon", "telemetry", "completions"],
    ),
    ("Monitor", &["monitor"]),
];

/// The clap command, its top-level help grouped (headings plain).
pub fn command() -> clap::Command {
    styled_command(false)
}

/// The clap command with the grouped top-level help, its headings styled
/// as clap styles its own when `color` is on.
fn styled_command(color: bool) -> clap::Command {
    let command = super::examples::add_to(Cli::command());
    let heading = |title: &str| {
        if color {
            let style = anstyle::Style::new().bold().underline();
            format!("{style}{title}:{style:#}")
        } else {
            format!("{title}:")
        }
    };
    // Not `{all-args}`: it would list the commands again, ungrouped.
    let template = format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}\n{}\n{{options}}{{after-help}}",
        grouped_commands(&command, &heading),
        heading("Options"),
    );
    command.help_template(template)
}

/// `Loop:\n  loop   Run Claude until …` for every group.
fn grouped_commands(command: &clap::Command, heading: &dyn Fn(&str) -> String) -> String {
    let width = command
        .get_subcommands()
        .map(|sub| sub.get_name().len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for (title, names) in GROUPS {
        let _ = writeln!(text, "{}", heading(title));
        for name in *names {
            let about = command
                .find_subcommand(name)
                .and_then(|sub| sub.get_about())
                .map(|about| about.to_string())
                .unwrap_or_default();
            let _ = writeln!(text, "  {name:<width$}  {about}");
        }
    }
    let _ = writeln!(
        text,
        "{}\n  {:<width$}  The help of the command named after it",
        heading("Help"),
        "help"
    );
    text.replace('{', "{{").replace('}', "}}")
}

/// Accepts any text but offers `values` to the help and the completions:
/// for options whose command checks the value itself, with its own message
/// (and exit code).
#[derive(Clone)]
pub struct Offered(pub &'static [&'static str]);

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        command: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        value
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| clap::Error::new(ErrorKind::InvalidUtf8).with_cmd(command))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().map(|value| PossibleValue::new(*value)),
        ))
    }
}

/// What parsing came to.
pub enum Parsed {
    Run(Box<Cli>),
    /// Help, version or an error, already printed: exit with this.
    Exit(std::process::ExitCode),
}

/// Parses `args` (without the program name).
pub fn parse(args: Vec<OsString>) -> Parsed {
    let color = color_before_parsing(&args);
    let mut command = styled_command(color).color(if color {
        clap::ColorChoice::Always
    } else {
        clap::ColorChoice::Never
    });
    let path = command_path(&command, &args);
    let no_command = args.is_empty();
    let argv = std::iter::once(OsString::from("ralph-hooks")).chain(args);
    let matches = match command.try_get_matches_from_mut(argv) {
        Ok(matches) => matches,
        Err(error) => return Parsed::Exit(report(&error, &command, &path, color)),
    };
    if no_command {
        // As before clap: the overview, and a failure status for scripts
        // that forgot the command.
        let help = command.render_help();
        let _ = write_stdout(&if color {
            help.ansi().to_string()
        } else {
            help.to_string()
        });
        return Parsed::Exit(std::process::ExitCode::from(1));
    }
    match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) if cli.command.is_none() => {
            eprintln!("ralph-hooks: no command given; run `ralph-hooks --help` for the list");
            Parsed::Exit(std::process::ExitCode::from(1))
        }
        Ok(cli) => Parsed::Run(Box::new(cli)),
        Err(error) => Parsed::Exit(report(&error, &command, &path, color)),
    }
}

/// Help and version on stdout (exit 0); an error as one line on stderr
/// (exit 1).
fn report(
    error: &clap::Error,
    command: &clap::Command,
    path: &[String],
    color: bool,
) -> std::process::ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = error.render();
            let _ = write_stdout(&if color {
                text.ansi().to_string()
            } else {
                text.to_string()
            });
            std::process::ExitCode::SUCCESS
        }
        _ => {
            eprintln!("ralph-hooks: {}", one_line(error, command, path));
            std::process::ExitCode::from(1)
        }
    }
}

/// Help into a closed pipe is nobody's problem (`ralph-hooks --help | head`).
fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// `--color` read ahead of clap, so the help clap prints obeys it too.
fn color_before_parsing(args: &[OsString]) -> bool {
    let mut words = args.iter().map(|a| a.to_string_lossy());
    let mut when = None;
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if word == "--color" {
            when = words.next().map(|w| w.into_owned());
        } else if let Some(value) = word.strip_prefix("--color=") {
            when = Some(value.to_string());
        }
    }
    let stdout_tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    super::color::enabled(
        match when.as_deref() {
            Some("always") => ColorWhen::Always,
            Some("never") => ColorWhen::Never,
            _ => ColorWhen::Auto,
        },
        |name| std::env::var_os(name),
        stdout_tty,
    )
}

/// One line for a clap error, in the CLI's words: what was wrong, the near
/// spelling when clap found one, and where the usage is.
pub fn one_line(error: &clap::Error, root: &clap::Command, path: &[String]) -> String {
    let help = format!("run `{} --help`", path.join(" "));
    let context = |kind: ContextKind| error.get(kind);
    let strings = |kind: ContextKind| -> Vec<String> {
        match context(kind) {
            Some(ContextValue::String(s)) => vec![s.clone()],
            Some(ContextValue::Strings(list)) => list.clone(),
            Some(ContextValue::StyledStr(s)) => vec![s.to_string()],
            Some(ContextValue::StyledStrs(list)) => list.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        }
    };
    // `: did you mean "loop"? Run `…` for the list` or `: run `…` for the list`.
    let then = |names: Vec<String>, purpose: &str| -> String {
        let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        if quoted.is_empty() {
            format!(": {help} {purpose}")
        } else {
            let mut run = help.clone();
            run.replace_range(..1, "R");
            format!(": did you mean {}? {run} {purpose}", or_list(&quoted))
        }
    };
    match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let given = strings(ContextKind::InvalidSubcommand)
                .pop()
                .unwrap_or_default();
            let whose = if path.len() > 1 {
                format!(" `{}`", path[1..].join(" "))
            } else {
                String::new()
            };
            // `steps` is `step` by another name: offer the command once.
            let parent = subcommand_at(root, &path[1..]);
            let mut suggested: Vec<String> = Vec::new();
            for name in strings(ContextKind::SuggestedSubcommand) {
                let name = parent
                    .find_subcommand(&name)
                    .map_or(name, |sub| sub.get_name().to_string());
                if !suggested.contains(&name) {
                    suggested.push(name);
                }
            }
            format!(
                "unknown{whose} command {given:?}{}",
                then(suggested, "for the list")
            )
        }
        ErrorKind::UnknownArgument => {
            let given = strings(ContextKind::InvalidArg).pop().unwrap_or_default();
            let mut suggested = strings(ContextKind::SuggestedArg);
            suggested.extend(strings(ContextKind::SuggestedSubcommand));
            format!(
                "unexpected argument {given:?}{}",
                then(suggested, "for the usage")
            )
        }
        ErrorKind::InvalidValue => {
            let arg = strings(ContextKind::InvalidArg).pop().unwrap_or_default();
            let mut name = arg
                .split([' ', '=', '['])
                .next()
                .unwrap_or(&arg)
                .to_string();
            if name.starts_with('<') {
                // A positional: say whose.
                name = format!("{name} of `{}`", path.join(" "));
            }
            let given = strings(ContextKind::InvalidValue).pop().unwrap_or_default();
            let valid = strings(ContextKind::ValidValue);
            if valid.is_empty() {
                format!("{name} needs a value: {help} for the usage")
            } else {
                format!("{name} must be {}, not {given:?}", or_list(&valid))
            }
        }
        ErrorKind::MissingRequiredArgument => {
            let missing = strings(ContextKind::InvalidArg);
            format!(
                "`{}` needs {}: {help} for the usage",
                path.join(" "),
                and_list(&missing)
            )
        }
        ErrorKind::ValueValidation => {
            let arg = strings(ContextKind::InvalidArg).pop().unwrap_or_default();
            let name = arg
                .split([' ', '=', '['])
                .next()
                .unwrap_or(&arg)
                .to_string();
            let given = strings(ContextKind::InvalidValue).pop().unwrap_or_default();
            let why = std::error::Error::source(error)
                .map(|source| format!(": {source}"))
                .unwrap_or_default();
            format!("{name} {given:?} is not valid{why}")
        }
        ErrorKind::ArgumentConflict => {
            let arg = strings(ContextKind::InvalidArg).pop().unwrap_or_default();
            let prior = strings(ContextKind::PriorArg);
            let name = |arg: &str| arg.split([' ', '=', '[']).next().unwrap_or(arg).to_string();
            if prior.is_empty() || prior.contains(&arg) {
                format!("{} given more than once; give it once", name(&arg))
            } else {
                let prior: Vec<String> = prior.iter().map(|p| name(p)).collect();
                format!(
                    "{} cannot be used with {}: {help} for the usage",
                    name(&arg),
                    and_list(&prior)
                )
            }
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let names = subcommand_names(root, &path[1..]);
            format!(
                "`{}` needs one of {}: {help} for what each does",
                path.join(" "),
                or_list(&names)
            )
        }
        _ => {
            // Clap's own first line: "error: the argument '--project <DIR>'
            // cannot be used multiple times".
            let rendered = error.render().to_string();
            let first = rendered
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ")
                .to_string();
            format!("{first}: {help} for the usage")
        }
    }
}

/// `["ralph-hooks", "task", "step"]`: the commands named in `args`, for
/// the `--help` an error points to. Option words are skipped (and the
/// value after the global options that take one).
fn command_path(root: &clap::Command, args: &[OsString]) -> Vec<String> {
    let mut path = vec!["ralph-hooks".to_string()];
    let mut command = root;
    let mut words = args.iter().map(|word| word.to_string_lossy());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if word == "--project" || word == "--color" {
            words.next();
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        match command.find_subcommand(word.as_ref()) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                command = sub;
            }
            None => break,
        }
    }
    path
}

/// The command at `path` under `root` (as far as the path goes).
fn subcommand_at<'a>(root: &'a clap::Command, path: &[String]) -> &'a clap::Command {
    let mut command = root;
    for name in path {
        match command.find_subcommand(name) {
            Some(sub) => command = sub,
            None => break,
        }
    }
    command
}

/// The visible subcommands of the command at `path` under `root`.
fn subcommand_names(root: &clap::Command, path: &[String]) -> Vec<String> {
    subcommand_at(root, path)
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_string())
        .collect()
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    joined(items, "or")
}

fn and_list(items: &[String]) -> String {
    joined(items, "and")
}

fn joined(items: &[String], word: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} {word} {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_for(args: &[&str]) -> String {
        let mut command = command();
        let argv = std::iter::once("ralph-hooks").chain(args.iter().copied());
        let path = command_path(
            &command,
            &args.iter().map(OsString::from).collect::<Vec<_>>(),
        );
        match command.try_get_matches_from_mut(argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(error) => one_line(&error, &command, &path),
        }
    }

    #[test]
    fn the_grammar_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn every_command_is_in_exactly_one_group() {
        let command = command();
        for sub in command.get_subcommands() {
            let name = sub.get_name();
            // `help`, and what only the hooks start (`guard-watch`).
            if name == "help" || sub.is_hide_set() {
                continue;
            }
            let groups = GROUPS
                .iter()
                .filter(|(_, names)| names.contains(&name))
                .count();
            assert_eq!(groups, 1, "{name} is in {groups} groups of the help");
        }
        for (_, names) in GROUPS {
            for name in *names {
                assert!(command.find_subcommand(name).is_some(), "{name} is gone");
            }
        }
    }

    #[test]
    fn misspellings_get_a_suggestion_on_one_line() {
        let lop = error_for(&["lop", "status"]);
        assert_eq!(
            lop,
            "unknown command \"lop\": did you mean \"loop\"? Run `ralph-hooks --help` for the list"
        );
        let flag = error_for(&["check", "--min-severty", "error"]);
        assert!(flag.contains("did you mean \"--min-severity\""), "{flag}");
        assert!(!flag.contains('\n'), "{flag}");
    }

    #[test]
    fn values_outside_the_list_say_what_is_allowed() {
        assert_eq!(
            error_for(&["task", "start", "x", "--priority", "urgent"]),
            "--priority must be low, medium or high, not \"urgent\""
        );
    }

    #[test]
    fn lists_read_as_prose() {
        let items = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(or_list(&items(&["a"])), "a");
        assert_eq!(or_list(&items(&["a", "b"])), "a or b");
        assert_eq!(and_list(&items(&["a", "b", "c"])), "a, b and c");
    }

    #[test]
    fn every_command_at_every_depth_has_examples() {
        let root = command();
        for path in crate::cli::command_paths() {
            let mut command = &root;
            for word in &path {
                command = command.find_subcommand(word).expect("a listed command");
            }
            if command.is_hide_set() {
                continue;
            }
            let after = command
                .get_after_help()
                .map(|text| text.to_string())
                .unwrap_or_default();
            assert!(
                after.contains("Examples"),
                "`{}` shows no examples",
                path.join(" ")
            );
        }
    }

    #[test]
    fn the_table_names_real_commands_without_text_of_their_own() {
        let bare = Cli::command_without_examples();
        for (path, _) in super::super::examples::SUBCOMMANDS {
            let mut command = &bare;
            for word in path.split(' ') {
                command = command
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("{path}: no such command"));
            }
            assert!(
                command.get_after_help().is_none(),
                "{path} has its own text beside its code; the table's would be unused"
            );
        }
    }
}
