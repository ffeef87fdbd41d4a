//! What the CLI says to a person, where it used to mislead: what a loop's
//! diagnostics condition covers, how the project is found, readable times,
//! the restart hint's flags, completions into a folder not made yet, and
//! an empty status line explained under `--debug`.

use std::path::Path;
use std::process::Output;

use crate::util::{self, TempDir};

fn run(project: &Path, args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Output {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    util::run_with_stdin(command, stdin)
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn loop_start_says_what_its_diagnostics_condition_covers() {
    let temp = TempDir::new("polish-coverage");
    let project = temp.path();
    let touched = ok(run(
        project,
        &["loop", "start", "fix all type errors", "--check", "true"],
        &[],
        b"",
    ));
    assert!(
        touched.contains("NOTE: the goal text is not checked"),
        "{touched}"
    );
    assert!(
        touched.contains("ONLY in the files this loop touches")
            && touched.contains("Add --diagnostics to require the whole project"),
        "{touched}"
    );
    ok(run(project, &["loop", "cancel"], &[], b""));
    let whole = ok(run(
        project,
        &[
            "loop",
            "start",
            "fix it",
            "--check",
            "true",
            "--diagnostics",
            "--no-warnings",
        ],
        &[("RALPH_HOOKS_DAEMON", "0")],
        b"",
    ));
    assert!(whole.contains("EVERY file of the project"), "{whole}");
}

#[test]
fn project_help_says_how_the_root_is_found() {
    let temp = TempDir::new("polish-help");
    let help = ok(run(temp.path(), &["status", "--help"], &[], b""));
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("$CLAUDE_PROJECT_DIR, else the nearest folder at or above the current one with a .claude/ folder, else the top of its git work tree, else the current directory"),
        "{help}"
    );
}

#[test]
fn times_print_to_the_second_and_the_restart_hint_keeps_the_flags() {
    let temp = TempDir::new("polish-times");
    let project = temp.path();
    let now = [("RALPH_HOOKS_NOW", "2026-11-21T12:00:00.123456789Z")];
    ok(run(
        project,
        &[
            "loop",
            "start",
            "ship it",
            "--promise",
            "DONE",
            "--check",
            "make test",
            "--max-iterations",
            "7",
            "--check-timeout",
            "60",
            "--max-tokens",
            "200k",
        ],
        &now,
        b"",
    ));
    let shown = ok(run(project, &["loop", "status"], &now, b""));
    assert!(
        shown.contains("started:    2026-11-21 12:00:00 UTC\n"),
        "{shown}"
    );
    assert!(!shown.contains("123456789"), "{shown}");
    let cancelled = ok(run(project, &["loop", "cancel"], &now, b""));
    let hint = cancelled
        .lines()
        .find_map(|line| line.strip_prefix("Restart it with: "))
        .unwrap_or_else(|| panic!("{cancelled}"));
    for flag in [
        "--check \"make test\"",
        "--promise \"DONE\"",
        "--max-iterations 7",
        "--check-timeout 60",
        "--max-tokens 200000",
    ] {
        assert!(hint.contains(flag), "{flag} missing: {hint}");
    }
}

#[test]
fn completions_install_makes_the_folder() {
    let temp = TempDir::new("polish-completions");
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_text = home.to_str().unwrap();
    let out = ok(run(
        temp.path(),
        &["completions", "bash", "--install"],
        &[("HOME", home_text), ("XDG_DATA_HOME", "")],
        b"",
    ));
    let script = home.join(".local/share/bash-completion/completions/ralph-hooks");
    assert!(out.contains(script.to_str().unwrap()), "{out}");
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("ralph__hooks")
    );
    ok(run(
        temp.path(),
        &["completions", "fish", "--install"],
        &[("HOME", home_text), ("XDG_CONFIG_HOME", "")],
        b"",
    ));
    assert!(
        home.join(".config/fish/completions/ralph-hooks.fish")
            .is_file()
    );
}

#[test]
fn an_empty_status_line_says_why_under_debug() {
    let temp = TempDir::new("polish-statusline");
    let project = temp.path();
    let none = run(
        project,
        &["statusline", "--debug"],
        &[],
        b"{\"session_id\": \"s-other\"}",
    );
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("prints nothing: no state folder"),
        "{none:?}"
    );
    ok(run(
        project,
        &["loop", "start", "ship it", "--promise", "DONE"],
        &[("CLAUDE_CODE_SESSION_ID", "s-owner")],
        b"",
    ));
    let other = run(
        project,
        &["statusline", "--debug"],
        &[],
        b"{\"session_id\": \"s-other\"}",
    );
    assert!(other.status.success());
    assert!(other.stdout.is_empty(), "{other:?}");
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains("prints nothing")
            && stderr.contains("belongs to session s-owner")
            && stderr.contains("this is session s-other"),
        "{stderr}"
    );
    // Without --debug it stays quiet, as Claude Code's status line must.
    let quiet = run(
        project,
        &["statusline"],
        &[],
        b"{\"session_id\": \"s-other\"}",
    );
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
}
