//! `ralph-hooks install --uninstall [--purge]` puts a git project back as it
//! was: `git status` clean, the settings' bytes as the user wrote them, no
//! folder and no process of ours left; and commands in a project never
//! installed into leave nothing git would show.

use std::path::Path;
use std::process::Output;

use crate::util::{self, TempDir};

fn run(project: &Path, args: &[&str]) -> Output {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    util::run_with_stdin(command, b"")
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

fn git(project: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(project)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A git project with one committed file.
fn git_project(label: &str) -> TempDir {
    let temp = TempDir::new(label);
    git(temp.path(), &["init", "-q"]);
    std::fs::write(temp.path().join("app.py"), "x = 1\n").unwrap();
    git(temp.path(), &["add", "-A"]);
    git(temp.path(), &["commit", "-q", "-m", "start"]);
    temp
}

fn status(project: &Path) -> String {
    git(project, &["status", "--porcelain", "--untracked-files=all"])
}

/// The pid of the project's daemon, from its record.
fn daemon_pid(project: &Path) -> Option<u32> {
    let text =
        std::fs::read_to_string(project.join(".claude/orchestrator/daemon/daemon.json")).ok()?;
    let record: serde_json::Value = serde_json::from_str(&text).ok()?;
    record["pid"].as_u64().map(|pid| pid as u32)
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purposes: only its exit status is left.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

const HAND_FORMATTED: &str = "{\n\t\"model\" : \"opus\",\n\t\"permissions\": { \"allow\": [ \"Bash(ls:*)\" ] },\n\n\t\"hooks\": {\n\t\t\"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"/usr/local/bin/notify-done\" } ] } ]\n\t}\n}\n";

#[test]
fn a_project_without_claude_comes_back_clean() {
    let temp = git_project("uninstall-fresh");
    let project = temp.path();
    ok(run(project, &["install", "--statusline"]));
    assert!(project.join(".claude/settings.json").is_file());
    let installed = status(project);
    assert!(
        installed.contains("?? .claude/settings.json") && !installed.contains("orchestrator"),
        "{installed}"
    );
    let again = ok(run(project, &["install", "--statusline"]));
    assert!(
        again.contains("already registered") && again.contains("nothing changed"),
        "{again}"
    );
    ok(run(project, &["install", "--uninstall"]));
    assert_eq!(status(project), "");
    assert!(
        !project.join(".claude").exists(),
        "install made .claude/; uninstall must take it away: {:?}",
        util::files_under(&project.join(".claude"))
    );
}

#[test]
fn purge_stops_the_daemon_and_removes_the_state() {
    let temp = git_project("uninstall-purge");
    let project = temp.path();
    ok(run(project, &["install"]));
    ok(run(project, &["daemon", "start"]));
    let pid = daemon_pid(project).expect("the daemon's record");
    assert!(alive(pid));
    // A loop leaves state behind: kept without --purge.
    ok(run(
        project,
        &["loop", "start", "ship it", "--promise", "DONE"],
    ));
    let kept = ok(run(project, &["install", "--uninstall"]));
    assert!(!alive(pid), "uninstall left daemon {pid} running");
    assert!(kept.contains("--purge"), "{kept}");
    assert_eq!(status(project), "", "the kept state is ignored by git");
    assert!(project.join(".claude/orchestrator/loop.json").is_file());
    // The guard's watch folder, as the guard leaves it after watching.
    let watch = watch_dir(project);
    std::fs::create_dir_all(&watch).unwrap();
    std::fs::write(watch.join("journal"), "").unwrap();
    ok(run(project, &["install", "--uninstall", "--purge"]));
    assert_eq!(status(project), "");
    assert!(!project.join(".claude").exists());
    assert!(!watch.exists(), "--purge left {}", watch.display());
}

/// The guard's watch folder for the project's state root (as
/// `state::journal::watch_dir` names it).
fn watch_dir(project: &Path) -> std::path::PathBuf {
    let root = project.join(".claude/orchestrator");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in root.to_string_lossy().as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    util::test_state_home()
        .join("ralph-hooks")
        .join(format!("{hash:016x}"))
}

#[test]
fn a_tracked_hand_formatted_settings_file_comes_back_byte_for_byte() {
    let temp = git_project("uninstall-tracked");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/settings.json"), HAND_FORMATTED).unwrap();
    git(project, &["add", "-A"]);
    git(project, &["commit", "-q", "-m", "settings"]);
    ok(run(project, &["install", "--statusline"]));
    // Install keeps the user's formatting: their lines are all still there.
    let installed = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    for line in [
        "\t\"model\" : \"opus\",\n",
        "\t\"permissions\": { \"allow\": [ \"Bash(ls:*)\" ] },\n\n",
        "\t\t\"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"/usr/local/bin/notify-done\" }",
    ] {
        assert!(
            installed.contains(line),
            "{line:?} reformatted:\n{installed}"
        );
    }
    ok(run(project, &["install", "--uninstall"]));
    assert_eq!(
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        HAND_FORMATTED
    );
    assert_eq!(status(project), "");
}

/// `doctor` asks whether the guard's folder can be made without leaving it
/// made, and `--purge` takes `ralph-hooks/` in the state home too when no
/// other project's folder is in it (attack A32N-1).
#[test]
fn doctor_and_purge_leave_no_folder_in_the_state_home() {
    let temp = git_project("uninstall-state-home");
    let project = temp.path();
    let home = TempDir::new("uninstall-state-home-xdg");
    let in_home = |args: &[&str]| {
        let mut command = util::command("ralph-hooks", project);
        command.env("XDG_STATE_HOME", home.path()).args(args);
        util::run_with_stdin(command, b"")
    };
    let entries = || {
        std::fs::read_dir(home.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    ok(in_home(&["install"]));
    in_home(&["doctor"]);
    assert_eq!(entries(), Vec::<String>::new(), "doctor made a folder");
    // A loop and a Bash call make the guard's folder.
    ok(in_home(&[
        "loop",
        "start",
        "goal",
        "--check",
        "true",
        "--no-diagnostics",
    ]));
    let mut hook = util::command("ralph-pre-tool-stop-guard", project);
    hook.env("XDG_STATE_HOME", home.path());
    let payload = serde_json::json!({"hook_event_name": "PreToolUse", "session_id": "s",
        "cwd": project, "tool_name": "Bash", "tool_use_id": "toolu_1",
        "tool_input": {"command": "ls"}});
    util::run_with_stdin(hook, payload.to_string().as_bytes());
    assert_eq!(entries(), ["ralph-hooks"], "the guard made no folder");
    ok(in_home(&["install", "--uninstall", "--purge"]));
    assert_eq!(entries(), Vec::<String>::new(), "purge left a folder");
}

/// Empty hook containers the user wrote are not ours: an uninstall in a
/// project never installed into changes nothing, and an install and an
/// uninstall give them back (attack A32N-5).
#[test]
fn empty_hook_containers_the_user_wrote_stay() {
    for text in [
        "{\"hooks\": {}}\n",
        "",
        "{\n  \"env\": {\"A\": \"1\"},\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n",
        "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": []}\n    ]\n  }\n}\n",
        "{\n  \"hooks\": {\n    \"Notification\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send hi\"}]}],\n    \"SessionEnd\": []\n  }\n}\n",
    ] {
        let temp = git_project("uninstall-empty-containers");
        let project = temp.path();
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(project.join(".claude/settings.json"), text).unwrap();
        git(project, &["add", "-A"]);
        git(project, &["commit", "-q", "-m", "settings"]);
        ok(run(project, &["install", "--uninstall"]));
        assert_eq!(status(project), "", "uninstall alone changed {text:?}");
        ok(run(project, &["install"]));
        ok(run(project, &["install", "--uninstall", "--purge"]));
        assert_eq!(
            std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
            text
        );
        assert_eq!(status(project), "", "{text:?}");
    }
}

#[test]
fn an_untracked_settings_file_comes_back_and_later_edits_stay() {
    let temp = git_project("uninstall-untracked");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude/commands")).unwrap();
    std::fs::write(project.join(".claude/settings.json"), HAND_FORMATTED).unwrap();
    std::fs::write(project.join(".claude/commands/mine.md"), "my command\n").unwrap();
    let before = status(project);
    ok(run(project, &["install"]));
    ok(run(project, &["install", "--uninstall"]));
    assert_eq!(status(project), before);
    assert_eq!(
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        HAND_FORMATTED
    );
    assert!(project.join(".claude/commands/mine.md").is_file());

    // An edit made after install stays; only our entries are cut out.
    ok(run(project, &["install"]));
    let installed = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    let edited = installed.replacen(
        "\t\"model\" : \"opus\",\n",
        "\t\"model\" : \"opus\",\n\t\"env\": {\"A\": \"1\"},\n",
        1,
    );
    std::fs::write(project.join(".claude/settings.json"), &edited).unwrap();
    ok(run(project, &["install", "--uninstall"]));
    assert_eq!(
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        HAND_FORMATTED.replacen(
            "\t\"model\" : \"opus\",\n",
            "\t\"model\" : \"opus\",\n\t\"env\": {\"A\": \"1\"},\n",
            1
        )
    );
}

#[test]
fn sandbox_mode_comes_out_byte_for_byte() {
    if util::require_tool(
        "bwrap",
        "the sandbox-mode uninstall test (Debian: bubblewrap)",
    )
    .is_none()
        || util::require_tool("socat", "the sandbox-mode uninstall test (Debian: socat)").is_none()
    {
        return;
    }
    let temp = git_project("uninstall-sandbox");
    let project = temp.path();
    let original = "{\n  \"sandbox\": {\"autoAllowBashIfSandboxed\": false},\n  \"permissions\": {\n    \"deny\": [\"Read(./.env)\"]\n  }\n}\n";
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/settings.json"), original).unwrap();
    git(project, &["add", "-A"]);
    git(project, &["commit", "-q", "-m", "settings"]);
    ok(run(project, &["install", "--sandbox"]));
    assert!(project.join(".claude/orchestrator/sandbox.json").is_file());
    ok(run(project, &["install", "--uninstall"]));
    assert_eq!(
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        original
    );
    assert_eq!(status(project), "");
    assert!(!project.join(".claude/orchestrator").exists());
}

#[test]
fn check_in_a_project_never_installed_into_leaves_git_clean_and_says_it_started_a_daemon() {
    let temp = git_project("uninstall-check");
    let project = temp.path();
    let mut command = util::command("ralph-hooks", project);
    command.env_remove("RALPH_HOOKS_DAEMON").arg("check");
    let output = util::run_with_stdin(command, b"");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let pid = daemon_pid(project);
    // Whatever happens below, the daemon goes.
    let _ = run(project, &["daemon", "stop"]);
    assert!(pid.is_some(), "no daemon was started: {stderr}");
    assert_eq!(
        stderr.matches("started the daemon").count(),
        1,
        "said once: {stderr}"
    );
    assert_eq!(status(project), "", "{stderr}");
}

#[test]
fn hooks_in_a_project_never_installed_into_leave_git_clean() {
    let temp = git_project("uninstall-hooks");
    let project = temp.path();
    let edit = serde_json::json!({
        "hook_event_name": "PostToolUse", "session_id": "s1", "cwd": project,
        "tool_name": "Write", "tool_use_id": "t1",
        "tool_input": {"file_path": project.join("app.py"), "content": "x = 1\n"},
        "tool_response": {}
    });
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", project),
        edit.to_string().as_bytes(),
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(status(project), "");
}
