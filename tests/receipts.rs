//! Completion receipts through the real binaries: a loop that ends leaves an
//! in-toto statement of what it verified on which git tree, and `ralph-hooks
//! verify` re-runs it in a temporary worktree it removes afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "receipt-session";
/// A value the checks print and the receipt must never hold.
const SECRET: &str = "s3cr3t-token-41f7";

/// The two checks: one prints the secret from the environment; the other
/// fails when `RECEIPT_BREAK=1` (something outside the tree changed).
const CHECK_DONE: &str = "echo \"token=$RECEIPT_SECRET\"; test -f done.txt";
const CHECK_OK: &str = "test \"${RECEIPT_BREAK:-0}\" = 0 && grep -q ok src/a.fake";

struct Project {
    dir: TempDir,
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl Project {
    /// A project with the fake language server; in a git repository with
    /// one commit (`src/a.fake`, no `done.txt`) when `git` is set.
    fn new(git: bool) -> Project {
        let dir = TempDir::new("receipts");
        util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
        util::write_hook_config(
            dir.path(),
            json!({"diagnostics": {"timeout_ms": 5000, "warmup_wait_ms": 0}}),
        );
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.fake"), "ok\n").unwrap();
        let project = Project { dir };
        if git {
            // As many projects have it: git refuses an exclude pathspec
            // that names an ignored path, which the tree must cope with.
            std::fs::write(project.path().join(".gitignore"), ".claude/orchestrator\n").unwrap();
            project.git(&["init", "-q"]);
            project.git(&["add", "-A"]);
            project.git(&["commit", "-q", "-m", "start"]);
        }
        project
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        git_in(self.path(), args)
    }

    fn cli(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        let mut command = util::command("ralph-hooks", self.path());
        command.env("CLAUDE_CODE_SESSION_ID", SESSION).args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = util::run_with_stdin(command, b"");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn cli_ok(&self, args: &[&str]) -> String {
        let (code, stdout, stderr) = self.cli(args, &[]);
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
        stdout
    }

    /// An edit through the post-tool hook, so the loop counts the file as touched.
    fn edit(&self, relative: &str, text: &str) {
        let file = self.path().join(relative);
        let original = std::fs::read_to_string(&file).unwrap_or_default();
        std::fs::write(&file, text).unwrap();
        let payload = json!({
            "session_id": SESSION, "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
            "tool_response": {"filePath": file, "originalFile": original},
        });
        let output = util::run_with_stdin(
            util::command("ralph-post-tool-lsp-diagnostic", self.path()),
            payload.to_string().as_bytes(),
        );
        assert_eq!(output.status.code(), Some(0), "{output:?}");
    }

    fn stop(&self) -> Value {
        let payload = json!({
            "session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "done",
        });
        let mut command = util::command("ralph-stop-loop-controller", self.path());
        command.env("RECEIPT_SECRET", SECRET);
        let output = util::run_with_stdin(command, payload.to_string().as_bytes());
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "stop: {output:?}");
        if stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(stdout.trim()).unwrap()
        }
    }

    fn loop_state(&self) -> Value {
        let text =
            std::fs::read_to_string(self.path().join(".claude/orchestrator/loop.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn receipt_path(&self, id: &str) -> PathBuf {
        self.path()
            .join(".claude/orchestrator/receipts")
            .join(format!("{id}.json"))
    }

    /// Starts the two-check, touched-files loop and completes it.
    fn complete_a_loop(&self) -> (String, Value) {
        self.cli_ok(&[
            "loop",
            "start",
            "finish the work",
            "--check",
            CHECK_DONE,
            "--check",
            CHECK_OK,
            "--diagnostics=touched",
        ]);
        self.edit("src/a.fake", "ok\nERROR: broken\n");
        let first = self.stop();
        assert_eq!(first["decision"], "block", "{first}");
        self.edit("src/a.fake", "ok\nfixed\n");
        std::fs::write(self.path().join("done.txt"), "yes\n").unwrap();
        let done = self.stop();
        let message = done["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains("COMPLETED"), "{done}");
        let id = self.loop_state()["id"].as_str().unwrap().to_string();
        (id, done)
    }

    /// What verify must leave as it was: worktrees, refs, stash, index, status.
    fn git_picture(&self) -> Vec<String> {
        let index = std::fs::read(self.path().join(".git/index")).unwrap_or_default();
        vec![
            self.git(&["worktree", "list", "--porcelain"]),
            self.git(&["for-each-ref"]),
            self.git(&["stash", "list"]),
            self.git(&["status", "--porcelain", "--untracked-files=all"]),
            format!("{:x}", md5ish(&index)),
        ]
    }
}

/// A cheap fingerprint of bytes, to tell the index changed.
fn md5ish(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3)
    })
}

fn condition<'a>(statement: &'a Value, name: &str) -> &'a Value {
    statement["predicate"]["ralphHooks"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no condition {name} in {statement}"))
}

fn verify(project: &Project, receipt: &Path, env: &[(&str, &str)]) -> (i32, Value) {
    let receipt = receipt.to_string_lossy().into_owned();
    let (code, stdout, stderr) = project.cli(&["verify", &receipt, "--json", "--run-unsigned"], env);
    let value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("verify --json: {e}: {stdout}{stderr}"));
    (code, value)
}

fn outcome<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no condition {name} in {report}"))
}

#[test]
fn a_completed_loop_with_two_checks_and_diagnostics_verifies() {
    let project = Project::new(true);
    let index_before = std::fs::read(project.path().join(".git/index")).unwrap();
    let (id, done) = project.complete_a_loop();
    let receipt = project.receipt_path(&id);
    // The end message (and so the notification) names the receipt.
    let message = done["systemMessage"].as_str().unwrap();
    assert!(
        message.contains(&format!("Receipt: {}", receipt.display())),
        "{message}"
    );
    // Writing it left the user's index alone.
    assert_eq!(
        std::fs::read(project.path().join(".git/index")).unwrap(),
        index_before,
        "the user's index changed"
    );
    let text = std::fs::read_to_string(&receipt).unwrap();
    assert!(
        !text.contains(SECRET),
        "the receipt holds a check's output: {text}"
    );
    let statement: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        statement["predicateType"],
        "https://in-toto.io/attestation/test-result/v0.1"
    );
    assert_eq!(statement["predicate"]["result"], "PASSED");
    // The subject is the work as it was: the commit plus done.txt and the
    // edit, untracked files included, the state root left out.
    let tree = statement["subject"][0]["digest"]["gitTree"]
        .as_str()
        .unwrap();
    let listed = project.git(&["ls-tree", "-r", "--name-only", tree]);
    assert!(listed.lines().any(|l| l == "done.txt"), "{listed}");
    assert!(listed.lines().any(|l| l == ".lsp.json"), "{listed}");
    assert!(!listed.contains("orchestrator"), "{listed}");
    assert_eq!(
        project.git(&["show", &format!("{tree}:src/a.fake")]),
        "ok\nfixed\n"
    );
    let done_check = condition(&statement, &format!("check:{CHECK_DONE}"));
    assert_eq!(done_check["exitCode"], 0);
    assert_eq!(
        done_check["output"]["digest"]["sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    let diagnostics = condition(&statement, "diagnostics");
    assert_eq!(diagnostics["scope"], "touched");
    assert_eq!(diagnostics["files"], json!(["src/a.fake"]));
    assert_eq!(diagnostics["after"], json!({"errors": 0, "warnings": 0}));
    assert_eq!(diagnostics["before"], json!({"errors": 1, "warnings": 0}));
    assert_eq!(diagnostics["servers"][0]["name"], "fake");
    let looped = &statement["predicate"]["ralphHooks"]["loop"];
    assert_eq!(looped["id"], id.as_str());
    assert_eq!(looped["goal"], "finish the work");
    assert_eq!(looped["iterations"], 2);
    // `loop status` links it.
    let status = project.cli_ok(&["loop", "status"]);
    assert!(
        status.contains(&format!("receipt:    {}", receipt.display())),
        "{status}"
    );

    let before = project.git_picture();
    let (code, report) = verify(&project, &receipt, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["tree"], tree);
    for name in [
        format!("check:{CHECK_DONE}"),
        format!("check:{CHECK_OK}"),
        "diagnostics".to_string(),
    ] {
        assert_eq!(outcome(&report, &name)["outcome"], "reproduced", "{report}");
    }
    assert_eq!(
        project.git_picture(),
        before,
        "verify left something behind"
    );
    // The text form says which tree it checked.
    let (code, text, _) = project.cli(
        &["verify", &receipt.to_string_lossy(), "--run-unsigned"],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("Tree: {tree}")), "{text}");
}

#[test]
fn a_check_that_now_fails_on_the_tree_is_reported_as_differing() {
    let project = Project::new(true);
    let (id, _) = project.complete_a_loop();
    let receipt = project.receipt_path(&id);
    let before = project.git_picture();
    let (code, report) = verify(&project, &receipt, &[("RECEIPT_BREAK", "1")]);
    assert_eq!(code, 1, "{report}");
    let differs = outcome(&report, &format!("check:{CHECK_OK}"));
    assert_eq!(differs["outcome"], "differs", "{report}");
    assert_eq!(differs["detail"], "exit 1 here, exit 0 in the receipt");
    assert_eq!(
        outcome(&report, &format!("check:{CHECK_DONE}"))["outcome"],
        "reproduced"
    );
    assert_eq!(
        project.git_picture(),
        before,
        "verify left something behind"
    );
}

#[test]
fn an_edited_receipt_fails_when_signed_and_reports_the_mismatch_when_not() {
    let project = Project::new(true);
    let first_tree = project
        .git(&["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_string();
    let (id, _) = project.complete_a_loop();
    let receipt = project.receipt_path(&id);
    let text = std::fs::read_to_string(&receipt).unwrap();
    let statement: Value = serde_json::from_str(&text).unwrap();
    let name = format!("check:{CHECK_DONE}");
    let edited_dir = TempDir::new("receipts-edited");
    let write = |file: &str, value: &Value| -> PathBuf {
        let path = edited_dir.path().join(file);
        std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
        path
    };
    let flip = |statement: &Value| -> Value {
        let mut edited = statement.clone();
        for condition in edited["predicate"]["ralphHooks"]["conditions"]
            .as_array_mut()
            .unwrap()
        {
            if condition["name"] == name.as_str() {
                condition["exitCode"] = json!(1);
            }
        }
        edited
    };

    // Unsigned: an exit code flipped shows as the check differing.
    let (code, report) = verify(&project, &write("flipped.json", &flip(&statement)), &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(outcome(&report, &name)["outcome"], "differs");
    assert_eq!(
        outcome(&report, &name)["detail"],
        "exit 0 here, exit 1 in the receipt"
    );
    // The tree swapped for the first commit's (no done.txt): the check differs.
    let mut swapped = statement.clone();
    swapped["subject"][0]["digest"]["gitTree"] = json!(first_tree);
    let (code, report) = verify(&project, &write("swapped.json", &swapped), &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["tree"], first_tree.as_str());
    assert_eq!(outcome(&report, &name)["outcome"], "differs");
    // A tree that is nowhere here cannot be checked.
    swapped["subject"][0]["digest"]["gitTree"] = json!("0123456789abcdef0123456789abcdef01234567");
    let (code, report) = verify(&project, &write("nowhere.json", &swapped), &[]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(outcome(&report, &name)["outcome"], "cannot_check");

    // Signed with an SSH key: it verifies, with and without allowed signers.
    let Some(_) = util::require_tool("ssh-keygen", "signed receipts (OpenSSH)") else {
        return;
    };
    let key = edited_dir.path().join("key");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "tester", "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = edited_dir.path().join("allowed_signers");
    std::fs::write(
        &allowed,
        format!("tester@example namespaces=\"ralph-hooks-receipt\" {public}"),
    )
    .unwrap();
    let signed = edited_dir.path().join("signed.json");
    project.cli_ok(&[
        "loop",
        "receipt",
        &id,
        "--sign-with",
        &key.to_string_lossy(),
        "--out",
        &signed.to_string_lossy(),
    ]);
    let envelope: Value = serde_json::from_str(&std::fs::read_to_string(&signed).unwrap()).unwrap();
    assert_eq!(envelope["payloadType"], "application/vnd.in-toto+json");
    let (code, report) = verify(&project, &signed, &[]);
    assert_eq!(code, 0, "{report}");
    let signed_text = signed.to_string_lossy().into_owned();
    let allowed_text = allowed.to_string_lossy().into_owned();
    let (code, stdout, stderr) = project.cli(
        &["verify", &signed_text, "--allowed-signers", &allowed_text],
        &[],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("signed by tester@example"), "{stdout}");

    // The payload edited under the signature: refused before anything runs.
    let before = project.git_picture();
    for (file, edited) in [("flipped", flip(&statement)), ("swapped", swapped.clone())] {
        let mut forged = envelope.clone();
        let payload = serde_json::to_vec(&edited).unwrap();
        forged["payload"] = json!(ralph_hooks::receipts::envelope::base64_encode(&payload));
        let path = write(&format!("signed-{file}.json"), &forged);
        let (code, stdout, stderr) = project.cli(&["verify", &path.to_string_lossy()], &[]);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stderr.contains("signature does not verify"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    assert_eq!(project.git_picture(), before);
}

#[test]
fn a_loop_that_ended_failed_or_cancelled_has_a_receipt_that_says_so() {
    let project = Project::new(true);
    project.cli_ok(&[
        "loop",
        "start",
        "never",
        "--check",
        "exit 3",
        "--max-iterations",
        "1",
    ]);
    let stop = project.stop();
    let message = stop["systemMessage"].as_str().unwrap_or_default();
    assert!(message.contains("FAILED"), "{stop}");
    let id = project.loop_state()["id"].as_str().unwrap().to_string();
    let receipt = project.receipt_path(&id);
    assert!(
        message.contains(&receipt.display().to_string()),
        "{message}"
    );
    let statement: Value =
        serde_json::from_str(&std::fs::read_to_string(&receipt).unwrap()).unwrap();
    assert_eq!(statement["predicate"]["result"], "FAILED");
    assert_eq!(
        statement["predicate"]["failedTests"],
        json!(["check:exit 3"])
    );
    let looped = &statement["predicate"]["ralphHooks"]["loop"];
    assert_eq!(looped["status"], "FAILED");
    assert_eq!(looped["reason"], "max_iterations");
    assert_eq!(condition(&statement, "check:exit 3")["exitCode"], 3);
    // Its failure reproduces, which is no evidence of done: exit 3.
    let (code, report) = verify(&project, &receipt, &[]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["status"], "FAILED");

    // Cancelled before any Stop: a receipt with nothing evaluated.
    project.cli_ok(&["loop", "start", "later", "--check", "true"]);
    let cancelled = project.cli_ok(&["loop", "cancel"]);
    let id = project.loop_state()["id"].as_str().unwrap().to_string();
    assert!(cancelled.contains("Receipt: "), "{cancelled}");
    let exported = project.cli_ok(&["loop", "receipt"]);
    let statement: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(
        statement["predicate"]["ralphHooks"]["loop"]["status"],
        "CANCELLED"
    );
    assert_eq!(
        statement["predicate"]["ralphHooks"]["loop"]["id"],
        id.as_str()
    );
    assert_eq!(condition(&statement, "check:true")["evaluated"], false);
}

#[test]
fn a_project_outside_git_gets_a_tree_that_verify_finds_in_the_work() {
    let project = Project::new(false);
    let (id, _) = project.complete_a_loop();
    let receipt = project.receipt_path(&id);
    let statement: Value =
        serde_json::from_str(&std::fs::read_to_string(&receipt).unwrap()).unwrap();
    assert!(
        statement["subject"][0]["digest"]["gitTree"].is_string(),
        "{statement}"
    );
    let (code, report) = verify(&project, &receipt, &[]);
    assert_eq!(code, 0, "{report}");
    assert!(!project.path().join(".git").exists());
    // Changed work is another tree: nothing can be checked.
    std::fs::write(project.path().join("done.txt"), "changed\n").unwrap();
    let (code, report) = verify(&project, &receipt, &[]);
    assert_eq!(code, 2, "{report}");
}

/// What the CI job in docs/receipts.md does: the work and its receipt in
/// one commit, verified in a fresh clone that never saw the loop's tree.
#[test]
fn a_receipt_committed_with_the_work_verifies_in_a_fresh_clone() {
    let project = Project::new(true);
    let (id, _) = project.complete_a_loop();
    std::fs::create_dir_all(project.path().join("receipts")).unwrap();
    project.cli_ok(&["loop", "receipt", &id, "--out", "receipts/done.json"]);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "the work and its receipt"]);
    let clone_dir = TempDir::new("receipts-clone");
    let clone = clone_dir.path().join("repo");
    git_in(
        clone_dir.path(),
        &[
            "clone",
            "-q",
            "--no-local",
            &project.path().to_string_lossy(),
            "repo",
        ],
    );
    let mut command = util::command("ralph-hooks", &clone);
    command.args(["verify", "receipts/done.json", "--json", "--run-unsigned"]);
    let output = util::run_with_stdin(command, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{output:?}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(
        report["treeSource"]
            .as_str()
            .unwrap()
            .starts_with("the work here as it is now, which is that tree"),
        "{report}"
    );
    let worktrees = git_in(&clone, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}
