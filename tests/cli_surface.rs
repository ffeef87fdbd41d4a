//! The command line as a person meets it, through the real binary: each
//! command's own `--help` and the one-line errors with a near spelling
//! (insta snapshots under `tests/snapshots/`), completion scripts that
//! bash, zsh and fish load and answer from, progress on a terminal but not
//! in a pipe or JSON, colour under its switches, the monitor's second
//! start and repeated projects, and hook binaries that link none of it.
//!
//! A terminal here is a pseudo-terminal (`openpty`) on the child's stderr
//! or stdout; what the child drew on it is read back from the master side.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::monitor::Monitor;
use crate::util::{self, TempDir};

fn cli(project: &Path, args: &[&str]) -> Command {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    for name in ["NO_COLOR", "CLICOLOR_FORCE", "COLUMNS", "TERM"] {
        command.env_remove(name);
    }
    command
}

fn output(mut command: Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .expect("run ralph-hooks")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------- help

#[test]
fn every_command_has_its_own_help() {
    let dir = TempDir::new("cli-help");
    let mut seen: HashMap<String, String> = HashMap::new();
    let top = output(cli(dir.path(), &["--help"]));
    assert!(top.status.success());
    insta::assert_snapshot!("help", text(&top.stdout));
    for path in ralph_hooks::cli::command_paths() {
        let name = path.join(" ");
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = output(cli(dir.path(), &args));
        let stdout = text(&help.stdout);
        assert!(help.status.success(), "`{name} --help`: {help:?}");
        assert!(help.stderr.is_empty(), "`{name} --help`: {help:?}");
        // Its own: its usage line, its summary first, an example.
        assert!(
            stdout.contains(&format!("Usage: ralph-hooks {name}")),
            "`{name} --help` is not its own:\n{stdout}"
        );
        assert!(stdout.contains("Examples"), "`{name} --help`:\n{stdout}");
        assert!(
            !stdout.starts_with("ralph-hooks — "),
            "{name}: the global help"
        );
        if let Some(other) = seen.insert(stdout.clone(), name.clone()) {
            panic!("`{name} --help` is the same as `{other} --help`");
        }
        // `help <command>` is the same text.
        let mut via_help = vec!["help"];
        via_help.extend(path.iter().map(String::as_str));
        assert_eq!(text(&output(cli(dir.path(), &via_help)).stdout), stdout);
        insta::assert_snapshot!(format!("help-{}", path.join("-")), stdout);
    }
    // The monitor's options have help of their own.
    let monitor = text(&output(cli(dir.path(), &["monitor", "--help"])).stdout);
    for option in ["--port", "--bind", "--project", "--token", "--open"] {
        assert!(monitor.contains(option), "{monitor}");
    }
}

#[test]
fn misspellings_get_did_you_mean_on_one_line() {
    let dir = TempDir::new("cli-typos");
    let lines: &[&[&str]] = &[
        &["lop", "status"],
        &["check", "--min-severty", "error"],
        &["tsak", "list"],
        &["task", "stpe", "add", "x"],
        &["task", "list", "--jsno"],
        &["daemon", "stauts"],
        &["monitor", "--prot", "4000"],
        &["--colour", "never", "status"],
        &["completions", "zhs"],
        &["task", "start", "x", "--priority", "urgent"],
        &["xyzzy"],
        &["task"],
    ];
    let mut report = String::new();
    for args in lines {
        let out = output(cli(dir.path(), args));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: not one line:\n{stderr}"
        );
        report.push_str(&format!("$ ralph-hooks {}\n{stderr}\n", args.join(" ")));
    }
    for (args, near) in [
        (0, "\"loop\""),
        (1, "\"--min-severity\""),
        (2, "\"task\""),
        (3, "\"step\""),
        (4, "\"--json\""),
        (5, "\"status\""),
        (6, "\"--port\""),
        (7, "\"--color\""),
    ] {
        let block = report.split("$ ").nth(args + 1).unwrap();
        let suggested = block.split("did you mean ").nth(1).unwrap_or("");
        assert!(
            suggested.split('?').next().unwrap().contains(near),
            "{block}"
        );
    }
    insta::assert_snapshot!("misspellings", report);
}

// ---------------------------------------------------------------- completions

/// The completion script for `shell`, written to a file in `dir`.
fn completion_script(dir: &Path, shell: &str) -> PathBuf {
    let out = output(cli(dir, &["completions", shell]));
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stdout.is_empty());
    let path = dir.join(format!("ralph-hooks.{shell}"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

fn shell(name: &str) -> Option<PathBuf> {
    util::require_tool(
        name,
        "the completion tests (.ci/install-shells.sh installs it)",
    )
}

#[test]
fn bash_loads_the_completions_and_completes_commands_flags_and_values() {
    let Some(bash) = shell("bash") else { return };
    let dir = TempDir::new("cli-bash");
    let script = completion_script(dir.path(), "bash");
    // What bash's completion machinery does on TAB: the words so far, then
    // the registered function; COMPREPLY is the answer.
    let complete = |line: &str| -> Vec<String> {
        let program = r#"
            source "$1" || exit 3
            registered=$(complete -p ralph-hooks) || exit 4
            function=$(sed -E 's/.* -F ([^ ]+) .*/\1/' <<< "$registered")
            read -ra COMP_WORDS <<< "$2"
            [[ "$2" == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
            "$function" ralph-hooks "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\n' "${COMPREPLY[@]}"
        "#;
        let out = Command::new(&bash)
            .args(["--norc", "--noprofile", "-c", program, "bash"])
            .arg(&script)
            .arg(line)
            .output()
            .unwrap();
        assert!(out.status.success(), "bash: {out:?}");
        assert!(out.stderr.is_empty(), "bash: {}", text(&out.stderr));
        text(&out.stdout).lines().map(str::to_string).collect()
    };
    assert_eq!(complete("ralph-hooks lo"), ["loop"]);
    assert!(complete("ralph-hooks check --min").contains(&"--min-severity".to_string()));
    let severities = complete("ralph-hooks check --min-severity ");
    for value in ["error", "warning", "info", "hint"] {
        assert!(severities.contains(&value.to_string()), "{severities:?}");
    }
    let steps = complete("ralph-hooks task step ");
    for sub in ["set", "add", "start", "complete", "skip", "reorder"] {
        assert!(steps.contains(&sub.to_string()), "{steps:?}");
    }
    assert_eq!(complete("ralph-hooks completions f"), ["fish"]);
}

#[test]
fn zsh_loads_the_completions() {
    let Some(zsh) = shell("zsh") else { return };
    let dir = TempDir::new("cli-zsh");
    let script = completion_script(dir.path(), "zsh");
    // compinit registers completion functions; sourcing the script defines
    // `_ralph-hooks` and binds it to the command.
    let program = r#"
        autoload -Uz compinit && compinit -u -D || exit 3
        source "$1" || exit 4
        (( $+functions[_ralph-hooks] )) || exit 5
        print -r -- "$_comps[ralph-hooks]"
    "#;
    let out = Command::new(&zsh)
        .args(["-f", "-c", program, "zsh"])
        .arg(&script)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "zsh: {out:?}");
    assert!(out.stderr.is_empty(), "zsh: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "_ralph-hooks");
    // A syntax error anywhere in the script fails `zsh -n`.
    let syntax = Command::new(&zsh).arg("-n").arg(&script).output().unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
}

#[test]
fn fish_loads_the_completions_and_completes_commands_flags_and_values() {
    let Some(fish) = shell("fish") else { return };
    let dir = TempDir::new("cli-fish");
    let script = completion_script(dir.path(), "fish");
    let complete = |line: &str| -> Vec<String> {
        let out = Command::new(&fish)
            .args([
                "--no-config",
                "-c",
                "source $argv[1]; and complete -C $argv[2]",
            ])
            .arg(&script)
            .arg(line)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "fish: {out:?}");
        assert!(out.stderr.is_empty(), "fish: {}", text(&out.stderr));
        // `word<TAB>description` per line.
        text(&out.stdout)
            .lines()
            .map(|line| line.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(complete("ralph-hooks lo"), ["loop"]);
    assert!(complete("ralph-hooks check --min").contains(&"--min-severity".to_string()));
    let severities = complete("ralph-hooks check --min-severity ");
    for value in ["error", "warning", "info", "hint"] {
        assert!(severities.contains(&value.to_string()), "{severities:?}");
    }
    let daemon = complete("ralph-hooks daemon ");
    for sub in ["run", "start", "status", "stop"] {
        assert!(daemon.contains(&sub.to_string()), "{daemon:?}");
    }
}

#[test]
fn an_unknown_shell_is_refused_with_the_list() {
    let dir = TempDir::new("cli-shells");
    let out = output(cli(dir.path(), &["completions", "powershell"]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bash, zsh or fish"), "{stderr}");
}

// ---------------------------------------------------------------- terminals

/// What a run printed: on the pseudo-terminal (stderr, and stdout when
/// asked), and on the stdout pipe otherwise.
struct TerminalRun {
    terminal: String,
    stdout: String,
    code: Option<i32>,
}

/// Runs `command` with its stderr (and its stdout when `stdout_too`) on a
/// fresh pseudo-terminal, 100 columns wide, `TERM=xterm` unless the
/// command sets `TERM` itself.
fn on_terminal(mut command: Command, stdout_too: bool) -> TerminalRun {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors that we then own.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both are ours alone from here on.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // A terminal has a type; without one (or with `dumb`) nothing is drawn.
    let term_set = command
        .get_envs()
        .any(|(key, value)| key == "TERM" && value.is_some());
    if !term_set {
        command.env("TERM", "xterm");
    }
    command.stdin(Stdio::null());
    command.stderr(Stdio::from(slave.try_clone().unwrap()));
    if stdout_too {
        command.stdout(Stdio::from(slave));
    } else {
        drop(slave);
        command.stdout(Stdio::piped());
    }
    let reader = std::thread::spawn(move || {
        let mut file = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 4096];
        // EIO once every copy of the slave side is closed: the end.
        while let Ok(read) = file.read(&mut buffer) {
            if read == 0 {
                break;
            }
            bytes.extend_from_slice(&buffer[..read]);
        }
        bytes
    });
    let child = command.spawn().expect("spawn ralph-hooks");
    // The Command holds copies of the slave side until it is dropped.
    drop(command);
    let out = child.wait_with_output().unwrap();
    let terminal = reader.join().unwrap();
    TerminalRun {
        terminal: text(&terminal),
        stdout: text(&out.stdout),
        code: out.status.code(),
    }
}

/// Four `.fake` files, each answered after 400 ms by the fake server: a
/// check that takes about 1.6 s.
fn slow_project() -> TempDir {
    let dir = TempDir::new("cli-slow");
    util::write_fake_lsp_json(dir.path(), &["--mode", "slow-files", "--delay-ms", "400"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 20_000, "loop_budget_ms": 60_000}}),
    );
    for (name, body) in [
        ("a", "ERROR: bad\n"),
        ("b", "fine\n"),
        ("c", "fine\n"),
        ("d", "WARN: meh\n"),
    ] {
        std::fs::write(dir.path().join(format!("{name}.fake")), body).unwrap();
    }
    dir
}

#[test]
fn a_long_check_shows_progress_on_a_terminal_and_nothing_in_a_pipe() {
    let project = slow_project();
    let mut on_tty = cli(project.path(), &["check"]);
    on_tty.env("RALPH_HOOKS_PROGRESS_AFTER_MS", "200");
    let run = on_terminal(on_tty, false);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.terminal.contains("checking"), "{:?}", run.terminal);
    assert!(run.terminal.contains("/4 files"), "{:?}", run.terminal);
    // The bar is gone before the report, and the report is clean.
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("a.fake:1:1 error [fake E1] bad"),
        "{}",
        run.stdout
    );

    // In a pipe: not a byte of it.
    let mut piped = cli(project.path(), &["check"]);
    piped.env("RALPH_HOOKS_PROGRESS_AFTER_MS", "0");
    let out = output(piped);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), run.stdout);

    // `--json` on a terminal: nothing drawn either.
    let mut json = cli(project.path(), &["check", "--json"]);
    json.env("RALPH_HOOKS_PROGRESS_AFTER_MS", "0");
    let run = on_terminal(json, false);
    assert!(run.terminal.is_empty(), "{:?}", run.terminal);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(report.is_object());
}

#[test]
fn work_shorter_than_the_wait_draws_nothing() {
    let project = TempDir::new("cli-quick");
    std::fs::write(project.path().join("notes.txt"), "nothing to check\n").unwrap();
    // A wait that outlasts this check even on a loaded machine (the
    // default is a second).
    let mut check = cli(project.path(), &["check"]);
    check.env("RALPH_HOOKS_PROGRESS_AFTER_MS", "5000");
    let run = on_terminal(check, false);
    assert_eq!(run.code, Some(0), "{} {}", run.stdout, run.terminal);
    assert!(run.terminal.is_empty(), "{:?}", run.terminal);
}

#[test]
fn the_loops_first_check_shows_progress_on_a_terminal() {
    let project = slow_project();
    let mut start = cli(project.path(), &["loop", "start", "make it clean"]);
    start
        .env("RALPH_HOOKS_PROGRESS_AFTER_MS", "200")
        .env("CLAUDE_CODE_SESSION_ID", "cli-surface");
    let run = on_terminal(start, false);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.terminal.contains("checking the project"),
        "{:?}",
        run.terminal
    );
    assert!(run.stdout.contains("Project check now:"), "{}", run.stdout);
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
}

#[test]
fn search_and_rewrite_over_many_files_count_them_on_a_terminal_only() {
    let project = TempDir::new("cli-many");
    let files = 3000;
    for index in 0..files {
        std::fs::write(
            project.path().join(format!("m{index}.py")),
            format!("def f{index}(x):\n    return print(x, {index})\n"),
        )
        .unwrap();
    }
    let run = |args: &[&str], terminal: bool| -> TerminalRun {
        let mut command = cli(project.path(), args);
        // No wait: the count shows as soon as the walk starts.
        command.env("RALPH_HOOKS_PROGRESS_AFTER_MS", "0");
        if terminal {
            on_terminal(command, false)
        } else {
            let out = output(command);
            TerminalRun {
                terminal: text(&out.stderr),
                stdout: text(&out.stdout),
                code: out.status.code(),
            }
        }
    };
    let search = ["search", "print($$$A)", "--lang", "python"];
    let on_tty = run(&search, true);
    assert_eq!(on_tty.code, Some(0));
    assert!(
        on_tty.terminal.contains("searching"),
        "{:?}",
        on_tty.terminal
    );
    assert!(
        on_tty.terminal.contains(&format!("/{files} files")),
        "{:?}",
        on_tty.terminal
    );
    let piped = run(&search, false);
    assert_eq!(piped.terminal, "", "stderr in a pipe");
    assert_eq!(piped.stdout, on_tty.stdout);
    let json = run(
        &["search", "print($$$A)", "--lang", "python", "--json"],
        true,
    );
    assert_eq!(json.terminal, "", "--json on a terminal");

    let rewrite = [
        "rewrite",
        "print($$$A)",
        "log($$$A)",
        "--lang",
        "python",
        "--apply",
    ];
    let on_tty = run(&rewrite, true);
    assert_eq!(on_tty.code, Some(0), "{}", on_tty.stdout);
    assert!(
        on_tty.terminal.contains("rewriting"),
        "{:?}",
        on_tty.terminal
    );
    let written = std::fs::read_to_string(project.path().join("m7.py")).unwrap();
    assert_eq!(written, "def f7(x):\n    return log(x, 7)\n");
}

// ---------------------------------------------------------------- colour

const RED_ERROR: &str = "\u{1b}[1m\u{1b}[31merror\u{1b}[0m";

/// A project whose check finds one error at once.
fn erring_project() -> TempDir {
    let dir = TempDir::new("cli-colour");
    util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
    std::fs::write(dir.path().join("a.fake"), "ERROR: bad\n").unwrap();
    std::fs::write(dir.path().join("b.py"), "x = foo(1)\n").unwrap();
    dir
}

#[test]
fn colour_obeys_color_no_color_and_clicolor_force() {
    let project = erring_project();
    let check = |args: &[&str], env: &[(&str, &str)]| -> String {
        let mut all = vec!["check", "a.fake"];
        all.extend_from_slice(args);
        let mut command = cli(project.path(), &all);
        for (key, value) in env {
            command.env(key, value);
        }
        let out = output(command);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        text(&out.stdout)
    };
    let plain = check(&[], &[]);
    assert!(plain.contains("a.fake:1:1 error [fake E1] bad"), "{plain}");
    assert!(
        !plain.contains('\u{1b}'),
        "a pipe gets no colour: {plain:?}"
    );
    let always = check(&["--color", "always"], &[]);
    assert!(always.contains(RED_ERROR), "{always:?}");
    // The words are the same with and without colour.
    assert_eq!(strip_ansi(&always), plain);
    assert!(check(&["--color=always"], &[("NO_COLOR", "1")]).contains(RED_ERROR));
    assert!(check(&[], &[("CLICOLOR_FORCE", "1")]).contains(RED_ERROR));
    assert!(!check(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\u{1b}'));
    assert!(!check(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]).contains('\u{1b}'));
    // JSON is never painted.
    let json = check(&["--json", "--color", "always"], &[]);
    assert!(!json.contains('\u{1b}'), "{json:?}");
    serde_json::from_str::<serde_json::Value>(&json).unwrap();

    // On a terminal: colour unless NO_COLOR or --color never.
    let on_tty = |args: &[&str], env: &[(&str, &str)]| -> String {
        let mut all = vec!["check", "a.fake"];
        all.extend_from_slice(args);
        let mut command = cli(project.path(), &all);
        for (key, value) in env {
            command.env(key, value);
        }
        on_terminal(command, true).terminal
    };
    assert!(on_tty(&[], &[]).contains(RED_ERROR));
    assert!(!on_tty(&[], &[("NO_COLOR", "1")]).contains('\u{1b}'));
    assert!(!on_tty(&["--color", "never"], &[]).contains('\u{1b}'));
    assert!(!on_tty(&[], &[("TERM", "dumb")]).contains('\u{1b}'));
}

#[test]
fn diffs_are_coloured_by_line_and_never_in_a_pipe() {
    let project = TempDir::new("cli-diff");
    std::fs::write(project.path().join("m.py"), "print(1)\nprint(2)\n").unwrap();
    let rewrite = |color: &str| -> String {
        let out = output(cli(
            project.path(),
            &[
                "rewrite",
                "print($A)",
                "log($A)",
                "--lang",
                "python",
                "--color",
                color,
            ],
        ));
        assert!(out.status.success(), "{out:?}");
        text(&out.stdout)
    };
    let plain = rewrite("auto");
    assert!(
        plain.contains("-print(1)\n-print(2)\n+log(1)\n+log(2)\n"),
        "{plain}"
    );
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    let coloured = rewrite("always");
    assert!(
        coloured.contains("\u{1b}[31m-print(1)\u{1b}[0m"),
        "{coloured:?}"
    );
    assert!(
        coloured.contains("\u{1b}[32m+log(1)\u{1b}[0m"),
        "{coloured:?}"
    );
    assert_eq!(strip_ansi(&coloured), plain);
    // Nothing was written without --apply.
    assert_eq!(
        std::fs::read_to_string(project.path().join("m.py")).unwrap(),
        "print(1)\nprint(2)\n"
    );
}

#[test]
fn help_is_plain_in_a_pipe_and_styled_when_asked() {
    let dir = TempDir::new("cli-help-colour");
    let plain = output(cli(dir.path(), &["check", "--help"]));
    assert!(!plain.stdout.contains(&0x1b));
    let styled = output(cli(dir.path(), &["--color", "always", "check", "--help"]));
    assert!(styled.stdout.contains(&0x1b));
    assert_eq!(strip_ansi(&text(&styled.stdout)), text(&plain.stdout));
}

/// `text` without ANSI SGR sequences (`ESC [ … m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------- monitor

#[test]
fn a_second_monitor_for_the_project_says_where_the_first_is() {
    let project = TempDir::new("cli-monitor");
    let first = Monitor::start(project.path(), &[]);
    let out = output(cli(
        project.path(),
        &["monitor", "--port", &first.port.to_string()],
    ));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let base = first.url.split('#').next().unwrap();
    assert!(
        stderr.contains(&format!(
            "is already running at {base} (pid {}",
            first.pid()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("start another with --port "), "{stderr}");
    // The token stays in its file, as `status` keeps it.
    assert!(!stderr.contains(&first.token), "{stderr}");
    assert!(stderr.contains("monitor.json"), "{stderr}");
}

#[test]
fn a_repeated_project_is_watched_once() {
    let project = TempDir::new("cli-monitor-twice");
    let dir = project.path().display().to_string();
    let dotted = format!("{dir}/.");
    let monitor = Monitor::start(
        project.path(),
        &["--project", &dir, "--project", &dotted, "--project", &dir],
    );
    let (_, agents) = monitor.get("/api/agents");
    assert_eq!(agents.as_array().map(Vec::len), Some(1), "{agents}");
}

// ---------------------------------------------------------------- hooks

#[test]
fn the_hook_binaries_link_no_clap_and_no_indicatif() {
    let Some(nm) = util::require_tool("nm", "the hook binaries' symbols (binutils)") else {
        return;
    };
    // The functions linked in, by name (the debug info would also name
    // types of crates whose code was dropped).
    let symbols = |binary: &Path| -> String {
        let out = Command::new(&nm)
            .arg("--demangle")
            .arg(binary)
            .output()
            .unwrap();
        assert!(out.status.success(), "nm {}: {out:?}", binary.display());
        text(&out.stdout)
    };
    let contains = |binary: &Path, crate_name: &str| -> bool {
        symbols(binary).contains(&format!("{crate_name}::"))
    };
    // The CLI has them: the search can find what it looks for.
    let cli = util::bin("ralph-hooks");
    for crate_name in ["clap_builder", "clap_complete", "indicatif"] {
        assert!(
            contains(&cli, crate_name),
            "ralph-hooks without {crate_name}?"
        );
    }
    for hook in [
        "ralph-stop-loop-controller",
        "ralph-session-start",
        "ralph-pre-tool-stop-guard",
        "ralph-post-tool-lsp-diagnostic",
        "ralph-user-prompt-submit",
    ] {
        let binary = util::bin(hook);
        // (anstyle is not in the list: ast-grep's rule loader brings it.)
        for crate_name in ["clap_builder", "clap_complete", "indicatif"] {
            assert!(!contains(&binary, crate_name), "{hook} links {crate_name}");
        }
    }
}
