//! PostToolUse for Bash (issue 11): a command that changed files a server
//! handles gets their diagnostics, as an edit does, in one message; a
//! command that changed nothing is silent. Against the fake server (and
//! pyright, for `sed -i` on a real Python file).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn sh(dir: &Path, command: &str) {
    let status = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{command}");
}

/// A git project whose `.fake` files go to the fake server; `a.fake`
/// committed clean.
fn fake_project() -> TempDir {
    let dir = TempDir::new("bash-edits");
    util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 10_000, "ast_grep": false}}),
    );
    std::fs::write(dir.path().join(".gitignore"), ".claude/\n").unwrap();
    std::fs::write(dir.path().join("a.fake"), "fine\n").unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    dir
}

/// Runs the post-tool hook on a Bash PostToolUse for `command` (already run).
fn bash_hook(dir: &Path, command: &str) -> Output {
    let payload = json!({
        "session_id": "bash-session",
        "hook_event_name": "PostToolUse",
        "cwd": dir,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
    });
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", dir),
        payload.to_string().as_bytes(),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs the post-tool hook on Claude's Write of `file` (already written).
fn write_hook(dir: &Path, file: &Path) -> Output {
    let payload = json!({
        "session_id": "bash-session", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file, "content": "x"},
        "tool_response": {"type": "create", "filePath": file},
    });
    util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", dir),
        payload.to_string().as_bytes(),
    )
}

fn context(output: &Output) -> String {
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {:?}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn sed_introducing_an_error_is_reported_and_ls_is_silent() {
    let dir = fake_project();
    // The first command of the session: nothing changed.
    sh(dir.path(), "ls >/dev/null");
    let output = bash_hook(dir.path(), "ls");
    assert!(
        output.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&output.stdout)
    );

    sh(dir.path(), "sed -i 's/fine/ERROR: broken by sed/' a.fake");
    let output = bash_hook(dir.path(), "sed -i 's/fine/ERROR: broken by sed/' a.fake");
    let text = context(&output);
    assert!(
        text.starts_with("This Bash command changed 1 file a language server checks:"),
        "{text}"
    );
    assert!(
        text.contains("a.fake:1:1 error [fake E1] broken by sed"),
        "{text}"
    );

    // Nothing changed since: silent, although a.fake is still dirty.
    let output = bash_hook(dir.path(), "ls");
    assert!(
        output.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_command_changing_two_files_gets_one_message_with_new_and_old_problems() {
    let dir = fake_project();
    sh(dir.path(), "printf 'ERROR: old one\\n' > b.fake");
    // b.fake's last result (as an edit or an earlier command would leave it).
    bash_hook(dir.path(), "printf ...");
    sh(
        dir.path(),
        "printf 'ERROR: old one\\nERROR: new one\\n' > b.fake && printf 'ERROR: in a\\n' > a.fake && echo plain > notes.txt",
    );
    let text = context(&bash_hook(dir.path(), "a generator"));
    assert!(
        text.starts_with("This Bash command changed 2 files a language server checks:"),
        "{text}"
    );
    assert!(text.contains("a.fake:1:1 error [fake E1] in a"), "{text}");
    assert!(
        text.contains("Introduced by this edit (1):\nb.fake:2:1 error [fake E1] new one"),
        "{text}"
    );
    assert!(
        text.contains("Already there before this edit (1):\nb.fake:1:1 error [fake E1] old one"),
        "{text}"
    );
    assert!(!text.contains("notes.txt"), "{text}");
}

#[test]
fn git_checkout_reverting_a_file_is_a_change() {
    let dir = fake_project();
    sh(dir.path(), "printf 'ERROR: dirty\\n' > a.fake");
    assert!(context(&bash_hook(dir.path(), "printf")).contains("dirty"));
    // The revert makes a.fake clean for git: it was dirty last time.
    std::thread::sleep(std::time::Duration::from_millis(20));
    sh(dir.path(), "git checkout -q -- a.fake");
    let text = context(&bash_hook(dir.path(), "git checkout -- a.fake"));
    assert!(
        text.contains("LSP diagnostics for a.fake (fake): clean"),
        "{text}"
    );
    assert!(text.contains("fixed 1 earlier problem"), "{text}");
}

#[test]
fn outside_git_a_command_that_changed_nothing_is_silent() {
    let dir = fake_project();
    std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
    bash_hook(dir.path(), "ls");
    let output = bash_hook(dir.path(), "ls");
    assert!(output.stdout.is_empty());
}

#[test]
fn sed_on_a_python_file_is_checked_by_pyright() {
    if util::require_tool("pyright-langserver", "the Bash pyright test").is_none() {
        return;
    }
    let dir = fake_project();
    std::fs::write(dir.path().join("app.py"), "count: int = 1\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "py"]);
    bash_hook(dir.path(), "ls");
    sh(dir.path(), "sed -i 's/= 1/= \"one\"/' app.py");
    let text = context(&bash_hook(dir.path(), "sed -i ... app.py"));
    assert!(
        text.contains("app.py:1:14 error [Pyright reportAssignmentType]"),
        "{text}"
    );
}

/// Issue 30 item 4 for the shell: ruff lints beside pyright in the report
/// of a Bash command, as after an edit, each finding under its own source;
/// `"ruff": {"disabled": true}` in `.lsp.json` turns it off there too.
#[test]
fn ruff_lints_beside_pyright_after_a_bash_command_unless_turned_off() {
    if util::require_tool("pyright-langserver", "the Bash ruff-beside-pyright test").is_none()
        || util::require_tool("ruff", "the Bash ruff-beside-pyright test").is_none()
    {
        return;
    }
    let dir = fake_project();
    bash_hook(dir.path(), "ls");
    sh(
        dir.path(),
        "printf 'import os\\n\\nx = f\"abc\"\\ny: int = \"a\"\\n' > app.py",
    );
    let text = context(&bash_hook(dir.path(), "a generator"));
    assert!(
        text.contains("LSP diagnostics for app.py (pyright + ruff): issues found"),
        "{text}"
    );
    assert!(
        text.contains("app.py:4:10 error [Pyright reportAssignmentType]"),
        "{text}"
    );
    assert!(
        text.contains("app.py:3:5 warning [Ruff F541] f-string without any placeholders"),
        "{text}"
    );
    assert!(
        text.contains("app.py:1:8 warning [Ruff F401] `os` imported but unused"),
        "{text}"
    );

    // Turned off in `.lsp.json`: not asked after a command either.
    let lsp_json = dir.path().join(".lsp.json");
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(&lsp_json).unwrap()).unwrap();
    servers["ruff"] = json!({"disabled": true});
    std::fs::write(&lsp_json, servers.to_string()).unwrap();
    sh(dir.path(), "printf 'import sys\\n' >> app.py");
    let text = context(&bash_hook(dir.path(), "another generator"));
    assert!(
        text.contains("LSP diagnostics for app.py (pyright): issues found"),
        "{text}"
    );
    assert!(!text.contains("[Ruff"), "{text}");
}

/// A command that edits a file and commits it leaves it clean for git
/// before and after: the files changed between the HEAD before and the
/// HEAD after are the command's too.
#[test]
fn an_edit_committed_by_the_same_command_is_reported() {
    let dir = fake_project();
    bash_hook(dir.path(), "ls");
    let command = "sed -i 's/fine/ERROR: committed at once/' a.fake && git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qam w";
    sh(dir.path(), command);
    let text = context(&bash_hook(dir.path(), command));
    assert!(
        text.contains("a.fake:1:1 error [fake E1] committed at once"),
        "{text}"
    );
}

/// `cp -p`, `mv`, `tar x` give a new file an old modification time; its
/// status-change time is the command's.
#[test]
fn files_created_with_an_old_modification_time_are_reported() {
    let dir = fake_project();
    let outside = TempDir::new("bash-edits-old");
    bash_hook(dir.path(), "ls");
    std::fs::write(outside.path().join("old.fake"), "ERROR: copied old\n").unwrap();
    sh(outside.path(), "touch -d '2020-01-01' old.fake");
    let command = format!("cp -p {}/old.fake b.fake", outside.path().display());
    sh(dir.path(), &command);
    let text = context(&bash_hook(dir.path(), &command));
    assert!(
        text.contains("b.fake:1:1 error [fake E1] copied old"),
        "{text}"
    );

    std::fs::write(outside.path().join("old2.fake"), "ERROR: moved old\n").unwrap();
    sh(outside.path(), "touch -d '2020-01-01' old2.fake");
    let command = format!("mv {}/old2.fake c.fake", outside.path().display());
    sh(dir.path(), &command);
    let text = context(&bash_hook(dir.path(), &command));
    assert!(
        text.contains("c.fake:1:1 error [fake E1] moved old"),
        "{text}"
    );
}

/// Outside git, a project too big to walk after every command is said
/// once not to have its Bash edits checked, and an edit missed then is
/// never reported later as an unrelated command's.
#[test]
fn outside_git_a_project_too_big_to_walk_says_so_once_and_pins_nothing_later() {
    let dir = fake_project();
    std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
    let data = dir.path().join("aaa");
    std::fs::create_dir_all(&data).unwrap();
    for i in 0..5_100 {
        std::fs::write(data.join(format!("f{i}.txt")), "").unwrap();
    }
    let text = context(&bash_hook(dir.path(), "ls"));
    assert!(
        text.contains("not checked") && text.contains("git init"),
        "{text}"
    );
    sh(dir.path(), "sed -i 's/fine/ERROR: missed/' a.fake");
    let output = bash_hook(dir.path(), "sed -i ... a.fake");
    assert!(
        output.stdout.is_empty(),
        "said once: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    std::fs::remove_dir_all(&data).unwrap();
    let output = bash_hook(dir.path(), "true");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("missed"),
        "pinned on `true`: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// A command that makes the repository's first commit (HEAD unborn before)
/// is reported for the files that commit holds.
#[test]
fn a_files_first_commit_made_by_the_same_command_is_reported() {
    let dir = TempDir::new("bash-edits-first-commit");
    util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 10_000, "ast_grep": false}}),
    );
    std::fs::write(dir.path().join(".gitignore"), ".claude/\n").unwrap();
    git(dir.path(), &["init", "-q"]);
    bash_hook(dir.path(), "ls");
    let command = "printf 'ERROR: first of all\\n' > a.fake && git add -A && git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qm first";
    sh(dir.path(), command);
    let text = context(&bash_hook(dir.path(), command));
    assert!(
        text.contains("a.fake:1:1 error [fake E1] first of all"),
        "{text}"
    );
}

/// A file the hooks cannot read — not UTF-8 after a Write, over the size
/// limit after a Bash command — is said to be unchecked and counts as
/// touched, so a loop that checks its touched files does not complete over
/// it (engine attack E-4 and E-24: silence, and COMPLETED).
#[test]
fn an_unreadable_or_oversized_file_is_said_and_keeps_a_touched_loop_going() {
    let dir = fake_project();
    util::start_loop(dir.path(), "bash-session", &["--check", "true", "fix it"]);
    sh(dir.path(), "ls >/dev/null");
    bash_hook(dir.path(), "ls");

    // Claude's Write of a Latin-1 file.
    std::fs::write(dir.path().join("l1.fake"), b"ERROR: caf\xe9\n").unwrap();
    let text = context(&write_hook(dir.path(), &dir.path().join("l1.fake")));
    assert!(
        text.contains("l1.fake (fake): inconclusive — cannot read it: it is not valid UTF-8"),
        "{text}"
    );

    // A command's 17 MiB file.
    sh(
        dir.path(),
        "head -c 17825792 /dev/zero | tr '\\0' 'x' > huge.fake",
    );
    let text = context(&bash_hook(dir.path(), "a generator"));
    assert!(
        text.contains("huge.fake (fake): inconclusive — larger than 16 MiB, not checked"),
        "{text}"
    );

    std::fs::write(dir.path().join("l1.fake"), "fine\n").unwrap();
    let decision = util::stop_hook(dir.path(), "bash-session");
    assert_eq!(decision["decision"], "block", "{decision}");
    assert!(
        decision["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("huge.fake"),
        "{decision}"
    );
}

/// A file Claude wrote through a folder link that leads out of the project
/// is reported after the edit, but a touched loop does not hold it
/// inconclusive for ever: a project check never reads outside the project
/// (re-attack RE-16).
#[test]
fn a_file_written_through_a_link_out_of_the_project_does_not_trap_the_loop() {
    let dir = fake_project();
    let outside = TempDir::new("bash-edits-outside");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("lib")).unwrap();
    util::start_loop(dir.path(), "bash-session", &["--check", "true", "fix it"]);
    let file = dir.path().join("lib/x.fake");
    std::fs::write(&file, "fine\n").unwrap();
    write_hook(dir.path(), &file);
    let decision = util::stop_hook(dir.path(), "bash-session");
    assert!(decision.to_string().contains("COMPLETED"), "{decision}");
}

/// A folder linked in from outside the project (a shared library): a
/// command that edits a file there is reported as one that edits a project
/// file, in a git work tree (the link tracked, or not yet added) and
/// outside one (re-attack RE-16: git and the walk saw the link only, and
/// the edit went unreported).
#[test]
fn a_command_editing_a_file_in_a_folder_linked_in_from_outside_is_reported() {
    for (label, in_git, tracked) in [
        ("tracked", true, true),
        ("untracked", true, false),
        ("ignored", true, false),
        ("no-git", false, false),
    ] {
        let dir = TempDir::new(&format!("bash-edits-linked-{label}"));
        util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
        util::write_hook_config(
            dir.path(),
            json!({"diagnostics": {"timeout_ms": 10_000, "ast_grep": false}}),
        );
        std::fs::write(dir.path().join(".gitignore"), ".claude/\n").unwrap();
        std::fs::write(dir.path().join("a.fake"), "fine\n").unwrap();
        let outside = TempDir::new(&format!("bash-edits-linked-{label}-lib"));
        std::fs::write(outside.path().join("om.fake"), "fine\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("lib")).unwrap();
        if in_git {
            git(dir.path(), &["init", "-q"]);
            if label == "ignored" {
                // A machine's own link kept out of the repository (RC-8).
                std::fs::write(dir.path().join(".gitignore"), ".claude/\nlib\n").unwrap();
                git(dir.path(), &["add", "-A"]);
            } else if !tracked {
                git(dir.path(), &["add", "a.fake", ".gitignore"]);
            } else {
                git(dir.path(), &["add", "-A"]);
            }
            git(dir.path(), &["commit", "-q", "-m", "init"]);
        }
        // The session's first command takes the last two minutes as its
        // own (the files just written); the next one changed nothing.
        bash_hook(dir.path(), "true");
        let output = bash_hook(dir.path(), "true");
        assert!(
            output.stdout.is_empty(),
            "{label}: {}",
            String::from_utf8_lossy(&output.stdout)
        );

        let command = "sed -i 's/fine/ERROR: broken through the link/' lib/om.fake";
        sh(dir.path(), command);
        let text = context(&bash_hook(dir.path(), command));
        assert!(
            text.contains("lib/om.fake:1:1 error [fake E1] broken through the link"),
            "{label}: {text}"
        );
        // Nothing changed since: silent.
        let output = bash_hook(dir.path(), "ls");
        assert!(
            output.stdout.is_empty(),
            "{label}: {:?}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// A tracked folder link whose folder does not exist yet when the links
/// are listed (a checkout made before its sibling): once the folder is
/// there, a command's edit through the link is reported, though neither
/// the dirty files nor HEAD changed (re-attack RC-15).
#[test]
fn a_command_editing_through_a_tracked_link_that_led_nowhere_when_listed_is_reported() {
    let dir = TempDir::new("bash-edits-late-link");
    util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 10_000, "ast_grep": false}}),
    );
    std::fs::write(dir.path().join(".gitignore"), ".claude/\n").unwrap();
    std::fs::write(dir.path().join("a.fake"), "fine\n").unwrap();
    let outside = TempDir::new("bash-edits-late-link-lib");
    let target = outside.path().join("lib");
    std::os::unix::fs::symlink(&target, dir.path().join("lib")).unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    bash_hook(dir.path(), "true");
    let output = bash_hook(dir.path(), "true");
    assert!(output.stdout.is_empty(), "{output:?}");

    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("om.fake"), "fine\n").unwrap();
    bash_hook(dir.path(), "true");
    let command = "sed -i 's/fine/ERROR: broken through the link/' lib/om.fake";
    sh(dir.path(), command);
    let text = context(&bash_hook(dir.path(), command));
    assert!(
        text.contains("lib/om.fake:1:1 error [fake E1] broken through the link"),
        "{text}"
    );
}
