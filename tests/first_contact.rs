//! First contact with a project (install, uninstall, doctor, the slash
//! commands, the dashboard): what a black-box attack on those found, each
//! pinned by a test.

use std::path::Path;
use std::process::Output;

use crate::util::{self, TempDir};

fn run_env(project: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    util::run_with_stdin(command, b"")
}

fn run(project: &Path, args: &[&str]) -> Output {
    run_env(project, args, &[])
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn ok(output: Output) -> String {
    assert!(output.status.success(), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn git(project: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(project)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn git_project(label: &str) -> TempDir {
    let temp = TempDir::new(label);
    git(temp.path(), &["init", "-q"]);
    std::fs::write(temp.path().join("main.py"), "x = 1\n").unwrap();
    git(temp.path(), &["add", "-A"]);
    git(temp.path(), &["commit", "-q", "-m", "start"]);
    temp
}

/// `RALPH_HOOKS_STATE_DIR` naming the project itself: install refuses (no
/// `.gitignore` with `*` in the project root), and `--purge` refuses
/// without deleting anything.
#[test]
fn a_state_root_at_the_project_is_refused_and_never_purged() {
    let temp = git_project("fc-state-project");
    let project = temp.path();
    let state = [("RALPH_HOOKS_STATE_DIR", project)];
    let install = run_env(project, &["install"], &state);
    assert!(!install.status.success(), "{}", text(&install));
    assert!(
        text(&install).contains("project folder"),
        "{}",
        text(&install)
    );
    assert!(!project.join(".gitignore").exists());
    assert!(!project.join(".claude").exists(), "install changed nothing");
    let purge = run_env(project, &["install", "--uninstall", "--purge"], &state);
    assert!(!purge.status.success(), "{}", text(&purge));
    assert_eq!(text(&purge).trim().lines().count(), 1, "{}", text(&purge));
    assert!(project.join("main.py").is_file() && project.join(".git").is_dir());
    // A folder above the project is refused the same way.
    let parent = project.parent().unwrap();
    let above = run_env(
        project,
        &["install", "--uninstall", "--purge"],
        &[("RALPH_HOOKS_STATE_DIR", parent)],
    );
    assert!(!above.status.success(), "{}", text(&above));
    assert!(project.join("main.py").is_file());
}

/// A state root holding someone else's files: install refuses to make git
/// ignore it, and `--purge` (after an older install put our files there)
/// refuses and deletes nothing.
#[test]
fn a_shared_state_folder_is_never_purged() {
    let temp = git_project("fc-state-shared");
    let project = temp.path();
    let shared = TempDir::new("fc-shared");
    std::fs::create_dir(shared.path().join("docs")).unwrap();
    std::fs::write(shared.path().join("docs/thesis.txt"), "precious").unwrap();
    let state = [("RALPH_HOOKS_STATE_DIR", shared.path())];
    let install = run_env(project, &["install"], &state);
    assert!(!install.status.success(), "{}", text(&install));
    assert!(text(&install).contains("docs"), "{}", text(&install));
    assert!(!shared.path().join(".gitignore").exists());
    // As an older version left it: our files beside the user's.
    std::fs::write(shared.path().join("loop.json"), "{}").unwrap();
    let purge = run_env(project, &["install", "--uninstall", "--purge"], &state);
    assert!(!purge.status.success(), "{}", text(&purge));
    assert!(
        text(&purge).contains("nothing was changed"),
        "{}",
        text(&purge)
    );
    assert_eq!(
        std::fs::read_to_string(shared.path().join("docs/thesis.txt")).unwrap(),
        "precious"
    );
    assert!(shared.path().join("loop.json").exists(), "nothing deleted");
    // A folder of its own is purged as before.
    let own = TempDir::new("fc-own-state");
    let own_root = own.path().join("state");
    let state = [("RALPH_HOOKS_STATE_DIR", own_root.as_path())];
    ok(run_env(project, &["install"], &state));
    ok(run_env(
        project,
        &["loop", "start", "g", "--promise", "D"],
        &state,
    ));
    ok(run_env(
        project,
        &["install", "--uninstall", "--purge"],
        &state,
    ));
    assert!(!own_root.exists());
    assert!(project.join("main.py").is_file());
}

fn settings(project: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(project.join(".claude/settings.json")).unwrap())
        .unwrap()
}

fn stop_commands(project: &Path) -> Vec<String> {
    settings(project)["hooks"]["Stop"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|handler| handler["command"].as_str().map(str::to_string))
        .collect()
}

/// A handler the user prefixed with `RALPH_HOOKS_DEBUG=1` or `env …` is
/// still ours: doctor does not call it missing, install does not add a
/// second one, uninstall takes it out.
#[test]
fn hook_commands_with_an_env_prefix_are_ours() {
    let temp = git_project("fc-env-prefix");
    let project = temp.path();
    ok(run(project, &["install"]));
    let path = project.join(".claude/settings.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let controller = stop_commands(project)
        .into_iter()
        .find(|command| command.ends_with("ralph-stop-loop-controller"))
        .unwrap();
    let session = controller.replace("ralph-stop-loop-controller", "ralph-session-start");
    let text = text
        .replace(
            &format!("\"{controller}\""),
            &format!("\"RALPH_HOOKS_DEBUG=1 {controller}\""),
        )
        .replace(
            &format!("\"{session}\""),
            &format!("\"env FOO=1 {session}\""),
        );
    std::fs::write(&path, text).unwrap();
    let doctor = text_of_run(project, &["doctor"]);
    assert!(!doctor.contains("MISSING"), "{doctor}");
    let again = ok(run(project, &["install"]));
    let plain = stop_commands(project)
        .iter()
        .filter(|c| c.ends_with("ralph-stop-loop-controller"))
        .count();
    assert_eq!(
        plain,
        1,
        "one Stop controller, not two: {again}\n{:?}",
        stop_commands(project)
    );
    ok(run(project, &["install", "--uninstall"]));
    assert!(
        !project.join(".claude/settings.json").exists()
            || !std::fs::read_to_string(&path).unwrap().contains("ralph-"),
        "{}",
        std::fs::read_to_string(&path).unwrap_or_default()
    );
}

/// A handler under a path with an apostrophe, quoted as install quotes it
/// (`'…'\''…'`), is recognised: uninstall takes it out.
#[test]
fn hook_commands_under_a_path_with_an_apostrophe_are_ours() {
    let temp = git_project("fc-apostrophe");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let quoted = r#"'/home/o'\''brien/bin/ralph-stop-loop-controller'"#;
    let settings_text = serde_json::json!({
        "hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": quoted},
            {"type": "command", "command": "/usr/local/bin/notify-done"}
        ]}]}
    });
    std::fs::write(
        project.join(".claude/settings.json"),
        settings_text.to_string(),
    )
    .unwrap();
    let uninstall = ok(run(project, &["install", "--uninstall"]));
    assert!(uninstall.contains("Removed 1 "), "{uninstall}");
    assert_eq!(stop_commands(project), ["/usr/local/bin/notify-done"]);
}

fn text_of_run(project: &Path, args: &[&str]) -> String {
    text(&run(project, args))
}

/// A symlinked settings.json stays a link (its target gets the hooks and
/// gets its old bytes back), and a private file stays private.
#[test]
fn a_linked_private_settings_file_stays_a_private_link() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let temp = git_project("fc-settings-link");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::create_dir_all(project.join("shared")).unwrap();
    let shared = project.join("shared/claude-settings.json");
    let before = "{\n  \"model\": \"opus\"\n}\n";
    std::fs::write(&shared, before).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = project.join(".claude/settings.json");
    std::os::unix::fs::symlink("../shared/claude-settings.json", &link).unwrap();
    git(project, &["add", "-A"]);
    git(project, &["commit", "-q", "-m", "link"]);
    ok(run(project, &["install"]));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&shared)
            .unwrap()
            .contains("ralph-stop-loop-controller")
    );
    assert_eq!(std::fs::metadata(&shared).unwrap().mode() & 0o777, 0o600);
    ok(run(project, &["install", "--uninstall"]));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), before);
    assert_eq!(std::fs::metadata(&shared).unwrap().mode() & 0o777, 0o600);
    assert_eq!(git(project, &["status", "--porcelain"]), "");
}
