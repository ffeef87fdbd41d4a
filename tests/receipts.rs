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
    /// The project folder: the temp dir, or a folder inside it.
    root: PathBuf,
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
        let root = dir.path().to_path_buf();
        let project = Project { dir, root };
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
        &self.root
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
    let (code, stdout, stderr) =
        project.cli(&["verify", &receipt, "--json", "--run-unsigned"], env);
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

// ---------------------------------------------------------------------------
// The attack on receipts: a receipt file is untrusted input, verify answers
// honestly, a loop that just completed verifies here, the checkout is safe.
// ---------------------------------------------------------------------------

impl Project {
    /// A loop with one `--check` and no diagnostics, completed (its check
    /// must pass on the work as it is); the receipt's path.
    fn complete_simple(&self, check: &str) -> PathBuf {
        self.cli_ok(&[
            "loop",
            "start",
            "simple",
            "--check",
            check,
            "--no-diagnostics",
        ]);
        let done = self.stop();
        assert!(
            done["systemMessage"]
                .as_str()
                .unwrap_or_default()
                .contains("COMPLETED"),
            "{done}"
        );
        self.receipt_path(self.loop_state()["id"].as_str().unwrap())
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `value` as a receipt file in `dir`.
fn write_receipt(dir: &Path, file: &str, value: &Value) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

/// `verify --json` with `args`; the exit code, the report (or the refusal
/// object) and stderr.
fn verify_with(project: &Project, receipt: &Path, args: &[&str]) -> (i32, Value, String) {
    let receipt = receipt.to_string_lossy().into_owned();
    let mut all = vec!["verify", receipt.as_str(), "--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = project.cli(&all, &[]);
    let value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("verify --json: {e}: {stdout}{stderr}"));
    (code, value, stderr)
}

/// A made-up receipt whose only check writes a marker file: git's empty
/// tree is in every repository.
fn hostile_receipt(marker: &Path) -> Value {
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "x", "digest": {"gitTree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"}}],
        "predicateType": "https://in-toto.io/attestation/test-result/v0.1",
        "predicate": {
            "result": "PASSED", "passedTests": ["check:pwn"], "failedTests": [],
            "ralphHooks": {
                "loop": {"id": "loop-made-up", "status": "COMPLETED", "checkTimeoutSecs": 30},
                "conditions": [{"kind": "command", "name": "check:pwn", "passed": true,
                    "command": format!("touch '{}'", marker.display()), "exitCode": 0, "timedOut": false}],
            },
        },
    })
}

#[test]
fn an_unsigned_receipts_commands_run_only_with_run_unsigned() {
    let project = Project::new(true);
    let outside = TempDir::new("receipts-hostile");
    let marker = outside.path().join("PWNED");
    let receipt = write_receipt(outside.path(), "hostile.json", &hostile_receipt(&marker));
    let (code, report, stderr) = verify_with(&project, &receipt, &[]);
    assert!(!marker.exists(), "verify ran a receipt's command unasked");
    assert_eq!(code, 2, "{report}");
    let name = format!("check:touch '{}'", marker.display());
    assert_eq!(outcome(&report, &name)["outcome"], "cannot_check");
    assert!(
        stderr.contains("not signed by a key in an allowed-signers file"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("touch '{}'", marker.display())),
        "{stderr}"
    );
    // Asked for: it runs (and the user was told what first).
    let (code, report, stderr) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert!(marker.exists(), "{report}");
    assert_eq!(code, 0, "{report}");
    assert!(stderr.contains("running them (--run-unsigned)"), "{stderr}");
}

#[test]
fn a_receipts_project_path_never_leaves_the_tree() {
    let project = Project::new(true);
    let first_tree = project
        .git(&["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_string();
    std::fs::write(project.path().join("done.txt"), "yes\n").unwrap();
    let receipt = project.complete_simple("test -f done.txt");
    let outside = TempDir::new("receipts-prefix");
    let mut edited = read_json(&receipt);
    // The first commit has no done.txt: the check must differ there.
    edited["subject"][0]["digest"]["gitTree"] = json!(first_tree);
    let depth = project.path().components().count();
    for prefix in [
        format!("{}/", project.path().display()),
        format!("{}{}/", "../".repeat(depth), project.path().display()),
        "../".to_string(),
    ] {
        edited["subject"][0]["annotations"]["projectPath"] = json!(prefix);
        let path = write_receipt(outside.path(), "prefix.json", &edited);
        let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
        assert_eq!(code, 1, "{prefix}: {report}");
        assert!(
            report["refused"]
                .as_str()
                .unwrap_or_default()
                .contains("projectPath"),
            "{prefix}: {report}"
        );
    }
    // A plain relative folder the tree does not have: cannot be checked.
    edited["subject"][0]["annotations"]["projectPath"] = json!("no/such/");
    let path = write_receipt(outside.path(), "prefix.json", &edited);
    let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
    assert_eq!(code, 2, "{report}");
}

#[test]
fn a_git_tree_that_is_not_an_object_id_is_refused() {
    let project = Project::new(true);
    std::fs::write(project.path().join("done.txt"), "yes\n").unwrap();
    let receipt = project.complete_simple("test -f done.txt");
    let outside = TempDir::new("receipts-revision");
    let mut edited = read_json(&receipt);
    for revision in ["HEAD^{tree}", "HEAD", "main"] {
        edited["subject"][0]["digest"]["gitTree"] = json!(revision);
        let path = write_receipt(outside.path(), "revision.json", &edited);
        let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
        assert_eq!(code, 1, "{revision}: {report}");
        assert!(
            report["refused"]
                .as_str()
                .unwrap_or_default()
                .contains("not a git object id"),
            "{revision}: {report}"
        );
    }
}

#[test]
fn the_receipts_excluded_list_is_not_applied_to_the_work() {
    let project = Project::new(true);
    // The loop's work is not a commit: the clone must hash its work.
    std::fs::write(project.path().join("done.txt"), "yes\n").unwrap();
    let receipt = project.complete_simple("! grep -rq FAIL src");
    std::fs::create_dir_all(project.path().join("receipts")).unwrap();
    // A failing file added after the loop, which the edited receipt hides.
    std::fs::write(project.path().join("src/failing.fake"), "FAIL\n").unwrap();
    let mut edited = read_json(&receipt);
    edited["subject"][0]["annotations"]["excluded"] =
        json!([".claude/orchestrator", "src/failing.fake"]);
    let path = write_receipt(&project.path().join("receipts"), "r.json", &edited);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "PR"]);
    let clone_dir = TempDir::new("receipts-excluded-clone");
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
    let mut command = util::command("ralph-hooks", &clone_dir.path().join("repo"));
    command.args(["verify", "receipts/r.json", "--json", "--run-unsigned"]);
    let output = util::run_with_stdin(command, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["treeSource"], "not found here", "{report}");
    assert!(
        report["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("src/failing.fake"),
        "{report}"
    );
    drop(path);
}

#[test]
fn a_failed_receipt_relabelled_completed_differs() {
    let project = Project::new(true);
    project.cli_ok(&[
        "loop",
        "start",
        "never",
        "--check",
        "exit 3",
        "--max-iterations",
        "1",
        "--no-diagnostics",
    ]);
    project.stop();
    let receipt = project.receipt_path(project.loop_state()["id"].as_str().unwrap());
    let mut forged = read_json(&receipt);
    forged["predicate"]["result"] = json!("PASSED");
    forged["predicate"]["passedTests"] = json!(["check:exit 3"]);
    forged["predicate"]["failedTests"] = json!([]);
    forged["predicate"]["ralphHooks"]["loop"]["status"] = json!("COMPLETED");
    forged["predicate"]["ralphHooks"]["loop"]["reason"] = json!("conditions_met");
    let outside = TempDir::new("receipts-forged");
    let path = write_receipt(outside.path(), "forged.json", &forged);
    let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
    assert_eq!(code, 1, "{report}");
    let status = outcome(&report, "status");
    assert_eq!(status["outcome"], "differs", "{report}");
    assert!(
        status["detail"]
            .as_str()
            .unwrap()
            .contains("check:exit 3 exited 3"),
        "{report}"
    );
}

#[test]
fn nothing_re_run_is_not_everything_reproduced() {
    let project = Project::new(true);
    // Cancelled before any Stop: nothing ran.
    project.cli_ok(&[
        "loop",
        "start",
        "later",
        "--check",
        "true",
        "--no-diagnostics",
    ]);
    project.cli_ok(&["loop", "cancel"]);
    let receipt = project.receipt_path(project.loop_state()["id"].as_str().unwrap());
    let (code, stdout, _) = project.cli(
        &["verify", &receipt.to_string_lossy(), "--run-unsigned"],
        &[],
    );
    assert_eq!(code, 3, "{stdout}");
    assert!(!stdout.contains("Everything reproduced"), "{stdout}");
    assert!(
        stdout.contains("the loop did not complete (CANCELLED)"),
        "{stdout}"
    );
    // A promise-only loop that completed: nothing can be re-run.
    project.cli_ok(&[
        "loop",
        "start",
        "words",
        "--promise",
        "DONE",
        "--no-diagnostics",
    ]);
    let payload = json!({
        "session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "<promise>DONE</promise>",
    });
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project.path()),
        payload.to_string().as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("COMPLETED"),
        "{output:?}"
    );
    let receipt = project.receipt_path(project.loop_state()["id"].as_str().unwrap());
    let (code, stdout, _) = project.cli(&["verify", &receipt.to_string_lossy()], &[]);
    assert_eq!(code, 3, "{stdout}");
    assert!(stdout.contains("Nothing was re-run that held"), "{stdout}");
}

/// The CI job's check: a receipt whose tree is not the pull request's head
/// fails with --require-work, though its tree is in the history.
#[test]
fn require_work_fails_a_receipt_of_an_older_commit() {
    let project = Project::new(true);
    std::fs::write(project.path().join("done.txt"), "yes\n").unwrap();
    let receipt = project.complete_simple("test -f done.txt");
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "work"]);
    std::fs::create_dir_all(project.path().join("receipts")).unwrap();
    std::fs::copy(&receipt, project.path().join("receipts/fix.json")).unwrap();
    // The receipt and the work: --require-work holds.
    let (code, report, _) = verify_with(
        &project,
        Path::new("receipts/fix.json"),
        &["--run-unsigned", "--require-work"],
    );
    assert_eq!(code, 0, "{report}");
    // A later breaking change in the same pull request.
    project.git(&["rm", "-q", "done.txt"]);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "later breaking change"]);
    let (code, report, _) = verify_with(
        &project,
        Path::new("receipts/fix.json"),
        &["--run-unsigned"],
    );
    assert_eq!(
        code, 0,
        "without --require-work any tree in the history counts: {report}"
    );
    let (code, report, _) = verify_with(
        &project,
        Path::new("receipts/fix.json"),
        &["--run-unsigned", "--require-work"],
    );
    assert_eq!(code, 1, "{report}");
    assert_eq!(outcome(&report, "tree")["outcome"], "differs", "{report}");
}

#[test]
fn a_nested_repository_makes_a_difference_cannot_be_checked() {
    let project = Project::new(true);
    let nested = project.path().join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git_in(&nested, &["init", "-q"]);
    std::fs::write(nested.join("lib.txt"), "code\n").unwrap();
    git_in(&nested, &["add", "-A"]);
    git_in(&nested, &["commit", "-q", "-m", "lib"]);
    let receipt = project.complete_simple("grep -q code vendor/lib/lib.txt");
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 2, "{report}");
    let check = outcome(&report, "check:grep -q code vendor/lib/lib.txt");
    assert_eq!(check["outcome"], "cannot_check", "{report}");
    assert!(
        check["detail"].as_str().unwrap().contains("vendor/lib"),
        "{report}"
    );
}

#[test]
fn a_filtered_file_makes_a_difference_cannot_be_checked() {
    let project = Project::new(true);
    project.git(&["config", "filter.rot.clean", "tr a-z n-za-m"]);
    project.git(&["config", "filter.rot.smudge", "tr a-z n-za-m"]);
    std::fs::write(project.path().join(".gitattributes"), "*.sec filter=rot\n").unwrap();
    std::fs::write(project.path().join("a.sec"), "hello\n").unwrap();
    // Older than the index: git trusts the index's stat data and does not
    // hash the file again (as when the loop ends a while after the commit).
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(project.path().join("a.sec"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "secret"]);
    let receipt = project.complete_simple("grep -q hello a.sec");
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(
        outcome(&report, "check:grep -q hello a.sec")["outcome"],
        "cannot_check"
    );
}

#[test]
fn an_ignored_input_makes_a_difference_cannot_be_checked() {
    let project = Project::new(true);
    std::fs::write(
        project.path().join(".gitignore"),
        ".claude/orchestrator\n.env\n",
    )
    .unwrap();
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "ignore .env"]);
    std::fs::write(project.path().join(".env"), "KEY=1\n").unwrap();
    let receipt = project.complete_simple("grep -q KEY .env");
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 2, "{report}");
    let check = outcome(&report, "check:grep -q KEY .env");
    assert_eq!(check["outcome"], "cannot_check", "{report}");
    assert!(
        check["detail"].as_str().unwrap().contains(".env"),
        "{report}"
    );
}

#[test]
fn a_check_that_reads_the_history_reproduces() {
    let project = Project::new(true);
    project.git(&["tag", "v1.2.3"]);
    let receipt = project.complete_simple("git describe --tags");
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report["treeSource"]
            .as_str()
            .unwrap()
            .contains("HEAD, whose tree it is"),
        "{report}"
    );
}

#[test]
fn the_users_global_excludes_file_keeps_files_out_of_the_tree() {
    let project = Project::new(true);
    let home = TempDir::new("receipts-home");
    std::fs::write(
        home.path().join(".gitconfig"),
        "[core]\n\texcludesFile = ~/.gitignore_global\n",
    )
    .unwrap();
    std::fs::write(home.path().join(".gitignore_global"), ".env\n").unwrap();
    std::fs::write(project.path().join(".env"), "API_KEY=sk-live-123\n").unwrap();
    project.cli_ok(&["loop", "start", "g", "--check", "true", "--no-diagnostics"]);
    let payload = json!({
        "session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "done",
    });
    let mut command = util::command("ralph-stop-loop-controller", project.path());
    command.env("HOME", home.path());
    let output = util::run_with_stdin(command, payload.to_string().as_bytes());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("COMPLETED"),
        "{output:?}"
    );
    let receipt = project.receipt_path(project.loop_state()["id"].as_str().unwrap());
    let tree = read_json(&receipt)["subject"][0]["digest"]["gitTree"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = project.git(&["ls-tree", "-r", "--name-only", &tree]);
    assert!(!listed.lines().any(|l| l == ".env"), "{listed}");
}

#[test]
fn verify_never_prunes_the_users_worktrees() {
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    let away = TempDir::new("receipts-worktree");
    let side = away.path().join("side");
    project.git(&[
        "worktree",
        "add",
        "-q",
        &side.to_string_lossy(),
        "-b",
        "side",
    ]);
    // Not mounted right now (another container, an unplugged drive).
    let moved = away.path().join("side-away");
    std::fs::rename(&side, &moved).unwrap();
    verify_with(&project, &receipt, &["--run-unsigned"]);
    std::fs::rename(&moved, &side).unwrap();
    let listed = project.git(&["worktree", "list", "--porcelain"]);
    assert!(listed.contains("branch refs/heads/side"), "{listed}");
    git_in(&side, &["status", "--porcelain"]);
}

#[test]
fn a_worktree_left_by_a_killed_verify_is_removed_by_the_next() {
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    // As a verify killed during a check leaves it: registered, under the
    // temp dir, named by a process that is gone.
    let stale = std::env::temp_dir().join("ralph-verify-4194302-1-0");
    let _ = std::fs::remove_dir_all(&stale);
    std::fs::create_dir_all(&stale).unwrap();
    let tree = stale.join("tree");
    project.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        &tree.to_string_lossy(),
        "HEAD",
    ]);
    verify_with(&project, &receipt, &["--run-unsigned"]);
    let listed = project.git(&["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("ralph-verify-4194302"), "{listed}");
    assert!(
        !stale.exists(),
        "the stale checkout is still in the temp dir"
    );
}

#[test]
fn the_checks_get_the_checkouts_project_dir_not_the_live_one() {
    let project = Project::new(true);
    let first_tree = project
        .git(&["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_string();
    std::fs::write(project.path().join("done.txt"), "yes\n").unwrap();
    let check = "test -f \"$CLAUDE_PROJECT_DIR/done.txt\"";
    let receipt = project.complete_simple(check);
    let mut edited = read_json(&receipt);
    edited["subject"][0]["digest"]["gitTree"] = json!(first_tree);
    let outside = TempDir::new("receipts-env");
    let path = write_receipt(outside.path(), "env.json", &edited);
    // util::command sets CLAUDE_PROJECT_DIR to the live project, as a
    // Claude Code session does.
    let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        outcome(&report, &format!("check:{check}"))["outcome"],
        "differs"
    );
}

#[test]
fn outside_git_verify_hashes_only_a_folder_that_looks_like_the_project() {
    let project = Project::new(false);
    let receipt = project.complete_simple("true");
    let elsewhere = TempDir::new("receipts-downloads");
    std::fs::write(
        elsewhere.path().join("big.iso"),
        "everything the user has\n",
    )
    .unwrap();
    let copied = elsewhere.path().join("receipt.json");
    std::fs::copy(&receipt, &copied).unwrap();
    let mut command = util::command("ralph-hooks", elsewhere.path());
    command.args(["verify", "receipt.json", "--json", "--run-unsigned"]);
    let output = util::run_with_stdin(command, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("does not look like the receipt's project"),
        "{stdout}"
    );
}

#[test]
fn a_receipt_verify_cannot_read_is_cannot_check_with_json() {
    let project = Project::new(true);
    let dir = TempDir::new("receipts-dir");
    let (code, report, _) = verify_with(&project, dir.path(), &[]);
    assert_eq!(code, 2, "{report}");
    assert!(
        report["error"].as_str().unwrap().contains("cannot read"),
        "{report}"
    );
    // An allowed-signers file that is not there is a setup problem, not a
    // bad signature.
    let receipt = project.complete_simple("true");
    let (code, report, _) = verify_with(
        &project,
        &receipt,
        &["--allowed-signers", "/no/such/allowed_signers"],
    );
    assert_eq!(code, 2, "{report}");
}

#[test]
fn control_characters_from_a_receipt_never_reach_the_terminal() {
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    let mut edited = read_json(&receipt);
    let evil = "\u{1b}]0;PWNED\u{7}\u{1b}[2J";
    edited["predicate"]["ralphHooks"]["loop"]["id"] = json!(format!("loop-x{evil}"));
    let outside = TempDir::new("receipts-controls");
    let path = write_receipt(outside.path(), "controls.json", &edited);
    let (_, stdout, stderr) =
        project.cli(&["verify", &path.to_string_lossy(), "--run-unsigned"], &[]);
    assert!(
        !stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'),
        "{stdout:?}"
    );
}

#[test]
fn loop_receipt_never_exports_or_signs_a_corrupt_file() {
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    std::fs::write(&receipt, "garbage\u{1b}[31m{").unwrap();
    let (code, stdout, stderr) = project.cli(&["loop", "receipt"], &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        !stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'),
        "{stdout:?}{stderr:?}"
    );
    assert!(stderr.contains("is not a receipt"), "{stderr}");
    assert!(!receipt.exists(), "the corrupt receipt was not moved aside");
}

#[test]
fn the_key_named_is_the_one_that_signed() {
    let Some(_) = util::require_tool("ssh-keygen", "signed receipts (OpenSSH)") else {
        return;
    };
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    let keys = TempDir::new("receipts-keys");
    let make = |name: &str| -> PathBuf {
        let key = keys.path().join(name);
        let made = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        key
    };
    let (alice, mallory) = (make("alice"), make("mallory"));
    let fingerprint = |key: &Path| -> String {
        let out = Command::new("ssh-keygen")
            .arg("-lf")
            .arg(key.with_extension("pub"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string()
    };
    let id = receipt.file_stem().unwrap().to_string_lossy().into_owned();
    let signed = keys.path().join("m.json");
    project.cli_ok(&[
        "loop",
        "receipt",
        &id,
        "--sign-with",
        &mallory.to_string_lossy(),
        "--out",
        &signed.to_string_lossy(),
    ]);
    // Honest: the fingerprint shown is mallory's, from the signature.
    let (code, report, _) = verify_with(&project, &signed, &["--run-unsigned"]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report["signature"]
            .as_str()
            .unwrap()
            .contains(&fingerprint(&mallory)),
        "{report}"
    );
    // The envelope's keyid claims alice's key: refused.
    let mut spoofed = read_json(&signed);
    spoofed["signatures"][0]["keyid"] = json!(fingerprint(&alice));
    let path = write_receipt(keys.path(), "spoofed.json", &spoofed);
    let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
    assert_eq!(code, 1, "{report}");
    assert!(
        report["refused"].as_str().unwrap().contains("keyid"),
        "{report}"
    );
    // The config's allowed-signers path is the project's, wherever verify
    // runs from.
    let public = std::fs::read_to_string(mallory.with_extension("pub")).unwrap();
    std::fs::write(
        project.path().join("allowed_signers"),
        format!("mallory@example namespaces=\"ralph-hooks-receipt\" {public}"),
    )
    .unwrap();
    util::write_hook_config(
        project.path(),
        json!({"diagnostics": {"timeout_ms": 5000, "warmup_wait_ms": 0},
               "receipts": {"allowed_signers": "allowed_signers"}}),
    );
    let mut command = util::command("ralph-hooks", &project.path().join("src"));
    command
        .env("CLAUDE_PROJECT_DIR", project.path())
        .env("CLAUDE_CODE_SESSION_ID", SESSION)
        .args(["verify", &signed.to_string_lossy(), "--json"]);
    let output = util::run_with_stdin(command, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{output:?}");
    assert!(stdout.contains("signed by mallory@example"), "{stdout}");
}

/// A project without a repository of its own, in `code/proj` of an
/// enclosing repository (a home folder kept in git).
fn nested_project(enclosing_ignore: &str) -> (Project, PathBuf) {
    let mut project = Project::new(false);
    let top = project.dir.path().to_path_buf();
    let inner = top.join("code/proj");
    std::fs::create_dir_all(&inner).unwrap();
    for entry in std::fs::read_dir(&top).unwrap().flatten() {
        if entry.file_name() != "code" {
            std::fs::rename(entry.path(), inner.join(entry.file_name())).unwrap();
        }
    }
    std::fs::write(top.join(".gitignore"), enclosing_ignore).unwrap();
    std::fs::write(top.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
    git_in(&top, &["init", "-q"]);
    git_in(&top, &["add", ".gitignore", ".bashrc"]);
    git_in(&top, &["commit", "-q", "-m", "dotfiles"]);
    project.root = inner;
    (project, top)
}

#[test]
fn a_project_inside_a_bigger_repository_hashes_only_its_own_files() {
    // Untracked files outside the project (a private key in the home
    // folder) never enter its tree.
    let (project, top) = nested_project("");
    std::fs::create_dir_all(top.join(".ssh")).unwrap();
    std::fs::write(top.join(".ssh/id_test"), "PRIVATE KEY\n").unwrap();
    let receipt = project.complete_simple("grep -q ok src/a.fake");
    let tree = read_json(&receipt)["subject"][0]["digest"]["gitTree"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = git_in(&top, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(!listed.contains(".ssh"), "{listed}");
    assert!(
        listed.lines().any(|l| l == "code/proj/src/a.fake"),
        "{listed}"
    );
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 0, "{report}");
}

#[test]
fn a_project_its_enclosing_repository_ignores_has_no_tree() {
    let (project, _top) = nested_project("*\n!.gitignore\n!.bashrc\n");
    let receipt = project.complete_simple("grep -q ok src/a.fake");
    let statement = read_json(&receipt);
    assert!(
        statement["subject"][0]["digest"]["gitTree"].is_null(),
        "{statement}"
    );
    assert!(
        statement["subject"][0]["annotations"]["treeUnavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("ignored"),
        "{statement}"
    );
    let (code, report, _) = verify_with(&project, &receipt, &["--run-unsigned"]);
    assert_eq!(code, 2, "{report}");
}

#[test]
fn an_interrupted_verify_removes_its_checkout() {
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    let outside = TempDir::new("receipts-interrupted");
    let pid_file = outside.path().join("check.pid");
    let check = format!("echo started > '{}'; sleep 3338", pid_file.display());
    let mut edited = read_json(&receipt);
    for condition in edited["predicate"]["ralphHooks"]["conditions"]
        .as_array_mut()
        .unwrap()
    {
        condition["command"] = json!(check);
        condition["name"] = json!(format!("check:{check}"));
    }
    edited["predicate"]["passedTests"] = json!([format!("check:{check}")]);
    let path = write_receipt(outside.path(), "sleep.json", &edited);
    let mut command = util::command("ralph-hooks", project.path());
    command
        .args(["verify", &path.to_string_lossy(), "--run-unsigned"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // A test run started in the background hands SIGINT down ignored, and
    // verify leaves an ignored signal ignored: start it at its default, as
    // a terminal does.
    // SAFETY: signal(2) is async-signal-safe, fine between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    // Until the check runs in its checkout.
    let mut started = false;
    for _ in 0..1200 {
        if pid_file.exists() {
            started = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started, "the check never started");
    let listed = project.git(&["worktree", "list", "--porcelain"]);
    assert!(listed.contains("ralph-verify-"), "{listed}");
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let listed = project.git(&["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("ralph-verify-"), "{listed}");
    let prefix = format!("ralph-verify-{pid}-");
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The check went with it (its group was killed; init reaps it).
    let running = || {
        Command::new("pgrep")
            .args(["-f", "^sleep 3338$"])
            .output()
            .is_ok_and(|output| output.status.success())
    };
    let mut gone = false;
    for _ in 0..200 {
        if !running() {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = Command::new("pkill").args(["-f", "^sleep 3338$"]).status();
    assert!(gone, "the check outlived verify");
}

#[test]
fn the_receipts_path_is_escaped_where_it_is_named() {
    let mut project = Project::new(false);
    let top = project.dir.path().to_path_buf();
    let odd = top.join("pe\u{1b}[31mX\nFAKE: ok");
    std::fs::create_dir_all(&odd).unwrap();
    for entry in std::fs::read_dir(&top).unwrap().flatten() {
        if entry.path() != odd {
            std::fs::rename(entry.path(), odd.join(entry.file_name())).unwrap();
        }
    }
    project.root = odd;
    project.cli_ok(&["loop", "start", "g", "--check", "true", "--no-diagnostics"]);
    let done = project.stop();
    let message = done["systemMessage"].as_str().unwrap_or_default();
    assert!(message.contains("COMPLETED"), "{done}");
    assert!(message.contains("Receipt: "), "{message:?}");
    assert!(
        !message.contains('\u{1b}') && !message.contains("\nFAKE"),
        "{message:?}"
    );
    let status = project.cli_ok(&["loop", "status"]);
    assert!(status.contains("receipt:"), "{status}");
    assert!(
        !status.contains('\u{1b}') && !status.contains("\nFAKE"),
        "{status:?}"
    );
}

#[test]
fn a_daemon_a_check_starts_ends_with_verify() {
    let walls_work = Command::new("bwrap")
        .args([
            "--dev-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--die-with-parent",
            "--",
            "true",
        ])
        .output()
        .is_ok_and(|output| output.status.success());
    if !walls_work {
        eprintln!("skipped: bubblewrap cannot make a PID namespace here");
        return;
    }
    let project = Project::new(true);
    let receipt = project.complete_simple("true");
    let check = "setsid sleep 3337 >/dev/null 2>&1 </dev/null & sleep 1; true";
    let mut edited = read_json(&receipt);
    for condition in edited["predicate"]["ralphHooks"]["conditions"]
        .as_array_mut()
        .unwrap()
    {
        condition["command"] = json!(check);
        condition["name"] = json!(format!("check:{check}"));
    }
    edited["predicate"]["passedTests"] = json!([format!("check:{check}")]);
    let outside = TempDir::new("receipts-daemon");
    let path = write_receipt(outside.path(), "daemon.json", &edited);
    let (code, report, _) = verify_with(&project, &path, &["--run-unsigned"]);
    assert_eq!(code, 0, "{report}");
    let running = || {
        Command::new("pgrep")
            .args(["-f", "^sleep 3337$"])
            .output()
            .is_ok_and(|output| output.status.success())
    };
    let mut gone = false;
    for _ in 0..200 {
        if !running() {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = Command::new("pkill").args(["-f", "^sleep 3337$"]).status();
    assert!(gone, "the check's daemon outlived verify");
}
