//! Seed 000 through the real `ralph-hooks` binary: resume save, list and
//! show (with `--from` and `--restart`), expiry after 30 days on a pinned
//! clock, session-start cleanup to 50 files, corrupt files, failed saves,
//! `render` and `path`.

use std::path::Path;
use std::process::Output;

use crate::util::{self, TempDir};

fn run(project: &Path, now: &str, args: &[&str]) -> Output {
    util::command("ralph-hooks", project)
        .env("RALPH_HOOKS_NOW", now)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn command_state(project: &Path) -> Vec<String> {
    let dir = project.join(".claude/orchestrator/command-state");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const SAVED_AT: &str = "2025-11-12T10:30:00Z";

fn save_example(project: &Path) -> Output {
    run(
        project,
        SAVED_AT,
        &[
            "resume",
            "save",
            "alfred:2-run",
            "SPEC-AUTH-001",
            "--phase",
            "implementation",
            "--completed",
            "spec_validation,test_setup",
            "--pending",
            "code_implementation",
            "--pending",
            "integration_test",
            "--context",
            "branch=feature/SPEC-AUTH-001",
            "--context",
            "files_modified=[\"/abs/path/to/auth.py\"]",
        ],
    )
}

#[test]
fn save_writes_the_seed_fields_atomically_named() {
    let temp = TempDir::new("resume-save");
    let output = save_example(temp.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Saved the resume state of alfred:2-run SPEC-AUTH-001 to command-state/2-run-SPEC-AUTH-001-20251112T103000Z.json (valid until 2025-12-12T10:30:00Z).\n"
    );
    assert_eq!(
        command_state(temp.path()),
        ["2-run-SPEC-AUTH-001-20251112T103000Z.json"]
    );
    let text = std::fs::read_to_string(
        temp.path()
            .join(".claude/orchestrator/command-state/2-run-SPEC-AUTH-001-20251112T103000Z.json"),
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "command": "alfred:2-run",
            "spec_id": "SPEC-AUTH-001",
            "current_phase": "implementation",
            "completed_steps": ["spec_validation", "test_setup"],
            "pending_steps": ["code_implementation", "integration_test"],
            "timestamp": "2025-11-12T10:30:00Z",
            "expiry": "2025-12-12T10:30:00Z",
            "context": {"branch": "feature/SPEC-AUTH-001", "files_modified": ["/abs/path/to/auth.py"]},
            "version": 1,
        })
    );

    // A later save of the same command and spec replaces the earlier file.
    let output = run(
        temp.path(),
        "2025-11-13T08:00:00Z",
        &[
            "resume",
            "save",
            "alfred:2-run",
            "SPEC-AUTH-001",
            "--phase",
            "implementation",
            "--completed",
            "spec_validation,test_setup,code_implementation",
            "--pending",
            "integration_test",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).ends_with(
            "Replaced the older state command-state/2-run-SPEC-AUTH-001-20251112T103000Z.json.\n"
        ),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        command_state(temp.path()),
        ["2-run-SPEC-AUTH-001-20251113T080000Z.json"]
    );
}

#[test]
fn list_and_show_continue_from_the_saved_step() {
    let temp = TempDir::new("resume-show");
    save_example(temp.path());
    let phase = run(
        temp.path(),
        SAVED_AT,
        &[
            "resume",
            "phase",
            "0-project",
            "--output",
            "project_name=MyProject",
            "--next",
            "1-plan",
        ],
    );
    assert_eq!(phase.status.code(), Some(0), "{}", stderr(&phase));

    let list = run(temp.path(), "2025-11-20T00:00:00Z", &["resume", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    assert_eq!(
        stdout(&list),
        "Resumable commands:\n\
         - alfred:2-run SPEC-AUTH-001: phase implementation, 2/4 steps done, next code_implementation; saved 2025-11-12T10:30:00Z, valid until 2025-12-12T10:30:00Z (command-state/2-run-SPEC-AUTH-001-20251112T103000Z.json)\n\
         Phase results:\n\
         - 0-project completed at 2025-11-12T10:30:00Z, next 1-plan (command-state/0-project-20251112T103000Z.json)\n"
    );

    // By the short name, without the spec id: there is only one.
    let show = run(
        temp.path(),
        "2025-11-20T00:00:00Z",
        &["resume", "show", "2-run"],
    );
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert_eq!(
        stdout(&show),
        "Resume `alfred:2-run` for SPEC-AUTH-001 from its saved state (saved 2025-11-12T10:30:00Z, valid until 2025-12-12T10:30:00Z).\n\
         Phase at the interruption: implementation.\n\
         Already completed, skip these steps and do not redo them:\n\
         - spec_validation\n\
         - test_setup\n\
         Continue with step `code_implementation`, then the remaining steps in this order:\n\
         1. code_implementation\n\
         2. integration_test\n\
         Saved context:\n\
         - branch: feature/SPEC-AUTH-001\n\
         - files_modified: [\"/abs/path/to/auth.py\"]\n\
         After each step, record the progress: `ralph-hooks resume save alfred:2-run SPEC-AUTH-001 --phase <phase> --completed <step,...> --pending <step,...>`.\n"
    );

    let from = run(
        temp.path(),
        "2025-11-20T00:00:00Z",
        &[
            "resume",
            "show",
            "alfred:2-run",
            "SPEC-AUTH-001",
            "--from",
            "test_setup",
        ],
    );
    assert_eq!(from.status.code(), Some(0), "{}", stderr(&from));
    assert!(
        stdout(&from).contains(
            "do not redo them:\n- spec_validation\nContinue with step `test_setup` (--from), then the remaining steps in this order:\n1. test_setup\n2. code_implementation\n3. integration_test\n"
        ),
        "{}",
        stdout(&from)
    );

    let restart = run(
        temp.path(),
        "2025-11-20T00:00:00Z",
        &["resume", "show", "2-run", "SPEC-AUTH-001", "--restart"],
    );
    assert_eq!(restart.status.code(), Some(0), "{}", stderr(&restart));
    assert!(
        stdout(&restart).starts_with(
            "Restart `alfred:2-run` for SPEC-AUTH-001 from the beginning; the saved progress is ignored (--restart).\nPhase at the interruption: implementation.\nContinue with step `spec_validation`, then the remaining steps in this order:\n1. spec_validation\n2. test_setup\n3. code_implementation\n4. integration_test\n"
        ),
        "{}",
        stdout(&restart)
    );

    let unknown_step = run(
        temp.path(),
        "2025-11-20T00:00:00Z",
        &["resume", "show", "2-run", "--from", "deploy"],
    );
    assert_eq!(unknown_step.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown_step),
        "ralph-hooks: step \"deploy\" is not one of the saved steps of alfred:2-run SPEC-AUTH-001: spec_validation, test_setup, code_implementation, integration_test\n"
    );

    let nothing = run(
        temp.path(),
        "2025-11-20T00:00:00Z",
        &["resume", "show", "3-sync"],
    );
    assert_eq!(nothing.status.code(), Some(1));
    assert!(
        stderr(&nothing).starts_with("ralph-hooks: no saved state for 3-sync in "),
        "{}",
        stderr(&nothing)
    );
}

#[test]
fn a_state_expires_after_thirty_days_and_is_invalidated() {
    let temp = TempDir::new("resume-expiry");
    save_example(temp.path());
    // 30 days to the second: still valid.
    let valid = run(
        temp.path(),
        "2025-12-12T10:30:00Z",
        &["resume", "show", "2-run"],
    );
    assert_eq!(valid.status.code(), Some(0), "{}", stderr(&valid));
    // One second later: refused with a warning, and the file is gone.
    let expired = run(
        temp.path(),
        "2025-12-12T10:30:01Z",
        &["resume", "show", "2-run"],
    );
    assert_eq!(expired.status.code(), Some(1));
    assert_eq!(stdout(&expired), "");
    assert_eq!(
        stderr(&expired),
        "ralph-hooks: the saved state of alfred:2-run SPEC-AUTH-001 expired on 2025-12-12T10:30:00Z (saved 2025-11-12T10:30:00Z; states are valid for 30 days), so it was invalidated: restart the command from the beginning\n"
    );
    assert_eq!(command_state(temp.path()), Vec::<String>::new());
    let again = run(
        temp.path(),
        "2025-12-12T10:30:01Z",
        &["resume", "show", "2-run"],
    );
    assert!(
        stderr(&again).contains("no saved state for 2-run"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn list_invalidates_expired_states_with_a_warning() {
    let temp = TempDir::new("resume-list-expired");
    save_example(temp.path());
    let list = run(temp.path(), "2026-01-01T00:00:00Z", &["resume", "list"]);
    assert_eq!(list.status.code(), Some(0));
    assert_eq!(stdout(&list), "No resumable commands.\n");
    assert!(
        stderr(&list).starts_with("ralph-hooks: warning: the saved state of alfred:2-run SPEC-AUTH-001 expired on 2025-12-12T10:30:00Z"),
        "{}",
        stderr(&list)
    );
    assert_eq!(command_state(temp.path()), Vec::<String>::new());
}

#[test]
fn a_corrupt_state_is_moved_aside_and_reported() {
    let temp = TempDir::new("resume-corrupt");
    let dir = temp.path().join(".claude/orchestrator/command-state");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("2-run-SPEC-X-20251112T103000Z.json"),
        "{\"command\": 3",
    )
    .unwrap();
    let list = run(temp.path(), SAVED_AT, &["resume", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    assert_eq!(stdout(&list), "No resumable commands.\n");
    assert!(
        stderr(&list).contains("2-run-SPEC-X-20251112T103000Z.json was corrupt (EOF while parsing an object at line 1 column 13); moved it to "),
        "{}",
        stderr(&list)
    );
    let names = command_state(temp.path());
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        names[0].starts_with("2-run-SPEC-X-20251112T103000Z.json.corrupt-"),
        "{names:?}"
    );
}

#[test]
fn a_failed_save_keeps_the_previous_state_and_says_so() {
    let temp = TempDir::new("resume-failed-save");
    save_example(temp.path());
    // The next save's file name is taken by a directory, so the atomic
    // rename fails (a read-only directory would not stop root).
    let blocker = temp
        .path()
        .join(".claude/orchestrator/command-state/2-run-SPEC-AUTH-001-20251113T080000Z.json");
    std::fs::create_dir_all(blocker.join("occupied")).unwrap();
    // The backup of what it tried to save goes to $TMPDIR/ralph-hooks-unsaved-<uid>.
    let tmp = temp.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let save_again = |extra: &[&str]| {
        let mut command = util::command("ralph-hooks", temp.path());
        command
            .env("RALPH_HOOKS_NOW", "2025-11-13T08:00:00Z")
            .env("TMPDIR", &tmp);
        command.args(extra);
        command.output().unwrap()
    };
    let output = save_again(&[
        "resume",
        "save",
        "alfred:2-run",
        "SPEC-AUTH-001",
        "--phase",
        "verification",
    ]);
    assert_eq!(output.status.code(), Some(1));
    // SAFETY: getuid(2) cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    let backup = tmp.join(format!(
        "ralph-hooks-unsaved-{uid}/2-run-SPEC-AUTH-001-20251113T080000Z.json"
    ));
    assert_eq!(
        stderr(&output).split(": cannot rename ").next().unwrap(),
        format!(
            "ralph-hooks: could not save the resume state of alfred:2-run SPEC-AUTH-001 to command-state/2-run-SPEC-AUTH-001-20251113T080000Z.json; the previous state is kept in command-state/2-run-SPEC-AUTH-001-20251112T103000Z.json; what it tried to save is kept in {0}; once the state folder is writable, retry with `ralph-hooks resume retry {0}`",
            backup.display()
        ),
        "{}",
        stderr(&output)
    );
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&backup).unwrap()).unwrap();
    assert_eq!(kept["current_phase"], "verification");
    let show = run(
        temp.path(),
        "2025-11-13T08:00:00Z",
        &["resume", "show", "2-run"],
    );
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(stdout(&show).contains("Phase at the interruption: implementation."));

    // Once the cause is gone, the retry hint does what it says.
    std::fs::remove_dir_all(&blocker).unwrap();
    let retry = save_again(&["resume", "retry", backup.to_str().unwrap()]);
    assert_eq!(retry.status.code(), Some(0), "{}", stderr(&retry));
    assert!(!backup.exists(), "the backup is removed once saved");
    assert_eq!(
        command_state(temp.path()),
        ["2-run-SPEC-AUTH-001-20251113T080000Z.json"],
        "the retried state replaced the previous one"
    );
    let show = run(
        temp.path(),
        "2025-11-13T08:00:00Z",
        &["resume", "show", "2-run"],
    );
    assert!(stdout(&show).contains("Phase at the interruption: verification."));
}

#[test]
fn ids_from_the_command_line_never_become_paths_unchecked() {
    let temp = TempDir::new("resume-ids");
    let output = run(
        temp.path(),
        SAVED_AT,
        &["resume", "save", "2-run", "../../etc", "--phase", "x"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("invalid spec id \"../../etc\""),
        "{}",
        stderr(&output)
    );
    assert!(!temp.path().join(".claude").exists());
}

#[test]
fn session_start_removes_old_files_and_keeps_fifty() {
    let temp = TempDir::new("resume-cleanup");
    let dir = temp.path().join(".claude/orchestrator/command-state");
    std::fs::create_dir_all(&dir).unwrap();
    // 55 fresh phase results a minute apart, and 3 older than 30 days.
    for minute in 0..55 {
        let name = format!("phase{minute:02}");
        let stamp = format!("2026-11-20T10:{minute:02}:00Z");
        std::fs::write(
            dir.join(format!("{name}-20261120T10{minute:02}00Z.json")),
            serde_json::json!({"phase": name, "timestamp": stamp, "status": "completed", "outputs": {}}).to_string(),
        )
        .unwrap();
    }
    for day in 1..4 {
        std::fs::write(
            dir.join(format!("old{day}-2026100{day}T000000Z.json")),
            serde_json::json!({"phase": format!("old{day}"), "timestamp": format!("2026-10-0{day}T00:00:00Z"), "status": "completed"}).to_string(),
        )
        .unwrap();
    }
    let input = format!(
        r#"{{"session_id":"s1","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#,
        temp.path().display()
    );
    let output = util::run_with_stdin(
        util::command("ralph-session-start", temp.path()),
        input.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let names = command_state(temp.path());
    assert_eq!(names.len(), 50, "{names:?}");
    // The old ones and the five oldest fresh ones went.
    assert_eq!(
        names.first().map(String::as_str),
        Some("phase05-20261120T100500Z.json")
    );
    assert!(
        names.iter().all(|name| !name.starts_with("old")),
        "{names:?}"
    );
}

#[test]
fn render_substitutes_outputs_and_refuses_leftovers() {
    let temp = TempDir::new("render");
    let project = temp.path();
    std::fs::write(
        project.join("phase.json"),
        r#"{"phase": "0-project", "timestamp": "2025-11-12T10:30:00Z", "status": "completed",
            "outputs": {"project_name": "MyProject", "mode": "personal", "tech_stack": ["python", "fastapi"]},
            "files_created": [], "next_phase": "1-plan"}"#,
    )
    .unwrap();
    std::fs::write(
        project.join("prompt.md"),
        "Plan {{PROJECT_NAME}} in {{MODE}} mode ({{TECH_STACK}}); keep {{ lower }} and {{PROJECT_NAME}}.\n",
    )
    .unwrap();
    let output = util::command("ralph-hooks", project)
        .args(["--debug", "render", "prompt.md", "--context", "phase.json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Plan MyProject in personal mode (python, fastapi); keep {{ lower }} and MyProject.\n"
    );
    assert_eq!(
        stderr(&output),
        "[DEBUG] Loading context from phase.json\n\
         [DEBUG] Replacing template variable: {{PROJECT_NAME}} → MyProject\n\
         [DEBUG] Replacing template variable: {{MODE}} → personal\n\
         [DEBUG] Replacing template variable: {{TECH_STACK}} → python, fastapi\n\
         [DEBUG] Replacing template variable: {{PROJECT_NAME}} → MyProject\n"
    );

    std::fs::write(
        project.join("prompt.md"),
        "{{PROJECT_NAME}} {{SPEC_ID}} {{BRANCH}} {{SPEC_ID}}\n",
    )
    .unwrap();
    let output = util::command("ralph-hooks", project)
        .args(["render", "prompt.md", "--context", "phase.json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "ralph-hooks: unsubstituted template variables: {{SPEC_ID}}, {{BRANCH}} (no phase output provides them; pass the phase result that does with --context)\n"
    );
}

#[test]
fn render_takes_the_latest_result_of_a_named_phase() {
    let temp = TempDir::new("render-phase");
    let project = temp.path();
    for (now, name) in [
        ("2025-11-12T10:00:00Z", "Old"),
        ("2025-11-12T11:00:00Z", "New"),
    ] {
        let output = run(
            project,
            now,
            &[
                "resume",
                "phase",
                "0-project",
                "--output",
                &format!("project_name={name}"),
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    std::fs::write(project.join("t.md"), "{{PROJECT_NAME}}").unwrap();
    let output = util::command("ralph-hooks", project)
        .args(["--debug", "render", "t.md", "--context", "0-project"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "New");
    assert!(
        stderr(&output).starts_with(&format!(
            "[DEBUG] Loading context from {}/.claude/orchestrator/command-state/0-project-20251112T110000Z.json\n",
            project.display()
        )),
        "{}",
        stderr(&output)
    );
}

#[test]
fn path_is_absolute_inside_the_root_or_refused() {
    let temp = TempDir::new("path");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".moai/project")).unwrap();
    let ok = util::command("ralph-hooks", project)
        .args(["--debug", "path", ".moai/project/product.md"])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(
        stdout(&ok),
        format!("{}/.moai/project/product.md\n", project.display())
    );
    assert_eq!(
        stderr(&ok),
        format!(
            "[DEBUG] Validating path: .moai/project/product.md → {}/.moai/project/product.md\n",
            project.display()
        )
    );
    let dir = util::command("ralph-hooks", project)
        .args(["path", ".moai/./project/"])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&dir),
        format!("{}/.moai/project\n", project.display())
    );

    let outside = util::command("ralph-hooks", project)
        .args(["path", "../elsewhere/x.md"])
        .output()
        .unwrap();
    assert_eq!(outside.status.code(), Some(1));
    assert_eq!(
        stderr(&outside),
        format!(
            "ralph-hooks: path outside the project root: {}/elsewhere/x.md (the root is {})\n",
            project.parent().unwrap().display(),
            project.display()
        )
    );

    let no_parent = util::command("ralph-hooks", project)
        .args(["path", "docs/missing/x.md"])
        .output()
        .unwrap();
    assert_eq!(no_parent.status.code(), Some(1));
    assert_eq!(
        stderr(&no_parent),
        format!(
            "ralph-hooks: parent directory not found: {}/docs/missing\n",
            project.display()
        )
    );

    std::os::unix::fs::symlink("/tmp", project.join("escape")).unwrap();
    let symlink = util::command("ralph-hooks", project)
        .args(["path", "escape/x.md"])
        .output()
        .unwrap();
    assert_eq!(symlink.status.code(), Some(1));
    assert!(
        stderr(&symlink)
            .starts_with("ralph-hooks: path outside the project root through a symlink: "),
        "{}",
        stderr(&symlink)
    );
}
