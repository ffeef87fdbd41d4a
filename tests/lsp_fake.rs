//! The diagnostics hook against the scripted fake language server
//! (`examples/fake_lsp_server.rs`): the normal protocol paths, and every
//! fault — each fault must end within the deadline plus 0.5 s, exit 0, say
//! "inconclusive", and leave no process of the server's group behind.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// The per-file deadline the fault tests configure.
const DEADLINE_MS: u64 = 1_500;
/// How much later than the deadline a hook may return.
const SLACK: Duration = Duration::from_millis(500);

struct FakeProject {
    dir: TempDir,
    pid_file: PathBuf,
}

impl FakeProject {
    fn new(mode: &str, extra_args: &[&str], timeout_ms: u64) -> FakeProject {
        FakeProject::with_server(mode, extra_args, timeout_ms, json!(null))
    }

    fn with_server(
        mode: &str,
        extra_args: &[&str],
        timeout_ms: u64,
        settings: Value,
    ) -> FakeProject {
        let dir = TempDir::new("lsp-fake");
        let pid_file = dir.path().join("fake.pid");
        let mut args = vec![
            json!("--mode"),
            json!(mode),
            json!("--pid-file"),
            json!(pid_file.display().to_string()),
            json!("--helper"),
        ];
        args.extend(extra_args.iter().map(|a| json!(a)));
        let mut server = json!({
            "command": util::fake_lsp_server().display().to_string(),
            "args": args,
            "extensionToLanguage": {".fake": "fake"},
        });
        if !settings.is_null() {
            server["settings"] = settings;
        }
        std::fs::write(
            dir.path().join(".lsp.json"),
            serde_json::to_string_pretty(&json!({"fake": server})).unwrap(),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/ralph-hooks.json"),
            json!({"diagnostics": {"timeout_ms": timeout_ms, "warmup_wait_ms": 0}}).to_string(),
        )
        .unwrap();
        FakeProject { dir, pid_file }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `relative` with `text` and runs the hook on a Write that
    /// created it.
    fn write_and_check(&self, relative: &str, text: &str) -> (Output, Duration) {
        let file = self.path().join(relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let payload = json!({
            "session_id": "fake-session",
            "cwd": self.path(),
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": file, "content": text},
            "tool_response": {"type": "create", "filePath": file, "content": text,
                              "structuredPatch": [], "originalFile": null},
        });
        let command = util::command("ralph-post-tool-lsp-diagnostic", self.path());
        let started = Instant::now();
        let output = util::run_with_stdin(command, payload.to_string().as_bytes());
        (output, started.elapsed())
    }
}

fn context(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no additionalContext in {value}"))
        .to_string()
}

/// The checks every fault test makes.
fn assert_fault(project: &FakeProject, output: &Output, elapsed: Duration) -> String {
    let deadline = Duration::from_millis(DEADLINE_MS);
    assert!(
        elapsed <= deadline + SLACK,
        "the hook took {elapsed:?}, more than the {deadline:?} deadline plus {SLACK:?}"
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = context(output);
    assert!(text.contains("inconclusive"), "{text}");
    assert!(text.contains("do not take this as clean"), "{text}");
    util::assert_group_gone(&project.pid_file);
    text
}

const SAMPLE: &str =
    "first line\nx = 1  # WARN: unused thing\ny = 2  # ERROR: y is wrong\nz  # HINT: style nit\n";

#[test]
fn normal_push_reports_errors_first_and_drops_hints() {
    let project = FakeProject::new("normal", &[], 5_000);
    let (output, _) = project.write_and_check("src/a.fake", SAMPLE);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        context(&output),
        "LSP diagnostics for src/a.fake (fake): issues found — 1 error, 1 warning.\n\
         Introduced by this edit (2):\n\
         src/a.fake:3:10 error [fake E1] y is wrong\n\
         src/a.fake:2:10 warning [fake W1] unused thing"
    );
    util::assert_group_gone(&project.pid_file);
}

#[test]
fn reencoded_uris_still_match_the_file() {
    // The fake writes `+` and `@` back unencoded; only path comparison matches.
    let project = FakeProject::new("normal", &[], 5_000);
    let (output, _) = project.write_and_check("src/a+b@c d.fake", "ERROR: odd name\n");
    let text = context(&output);
    assert!(
        text.contains("src/a+b@c d.fake:1:1 error [fake E1] odd name"),
        "{text}"
    );
}

#[test]
fn empty_then_real_publish_is_not_reported_clean() {
    let project = FakeProject::new("empty-then-real", &[], 5_000);
    let (output, _) = project.write_and_check("a.fake", "ERROR: late but real\n");
    let text = context(&output);
    assert!(text.contains("issues found — 1 error"), "{text}");
    assert!(
        text.contains("a.fake:1:1 error [fake E1] late but real"),
        "{text}"
    );
}

#[test]
fn pull_only_server_is_pulled() {
    let project = FakeProject::new("pull-only", &[], 5_000);
    let (output, _) = project.write_and_check("a.fake", "ok\nERROR: pulled\n");
    let text = context(&output);
    assert!(text.contains("a.fake:2:1 error [fake E1] pulled"), "{text}");
}

#[test]
fn server_requests_are_answered_with_the_configured_settings() {
    let project = FakeProject::with_server(
        "server-requests",
        &[],
        5_000,
        json!({"fake": {"marker": "xyzzy"}}),
    );
    let (output, _) = project.write_and_check("a.fake", "ERROR: after the handshake\n");
    let text = context(&output);
    assert!(
        text.contains("a.fake:1:1 error [fake E1] after the handshake"),
        "{text}"
    );
    assert!(
        text.contains("a.fake:1:1 warning [fake CFG] configuration received: xyzzy"),
        "{text}"
    );
}

#[test]
fn junk_lines_on_stdout_are_skipped() {
    let project = FakeProject::new("junk-then-normal", &[], 5_000);
    let (output, _) = project.write_and_check("a.fake", "ERROR: through the noise\n");
    assert!(context(&output).contains("error [fake E1] through the noise"));
}

#[test]
fn a_flood_of_log_messages_still_settles() {
    let project = FakeProject::new("flood-logs", &[], 10_000);
    let (output, _) = project.write_and_check("a.fake", "ERROR: after 20000 logs\n");
    assert!(context(&output).contains("error [fake E1] after 20000 logs"));
    util::assert_group_gone(&project.pid_file);
}

#[test]
fn slow_start_within_the_deadline_works() {
    let project = FakeProject::new("slow-start", &["--delay-ms", "400"], 5_000);
    let (output, _) = project.write_and_check("a.fake", "ERROR: slow but fine\n");
    assert!(context(&output).contains("error [fake E1] slow but fine"));
}

#[test]
fn clean_file_says_clean() {
    let project = FakeProject::new("normal", &[], 5_000);
    let (output, _) = project.write_and_check("a.fake", "all good\n");
    assert_eq!(
        context(&output),
        "LSP diagnostics for a.fake (fake): clean — no errors or warnings."
    );
}

#[test]
fn fault_hang_forever() {
    // A large file: the server never reads it, so our write must not block.
    let project = FakeProject::new("hang", &[], DEADLINE_MS);
    let big = "filler line that nobody reads\n".repeat(10_000);
    let (output, elapsed) = project.write_and_check("a.fake", &big);
    let text = assert_fault(&project, &output, elapsed);
    assert!(text.contains("no result within"), "{text}");
}

#[test]
fn fault_crash_mid_message() {
    let project = FakeProject::new("crash", &[], DEADLINE_MS);
    let (output, elapsed) = project.write_and_check("a.fake", "ERROR: never seen\n");
    let text = assert_fault(&project, &output, elapsed);
    assert!(text.contains("the server exited"), "{text}");
    // A crash is noticed at once, not at the deadline.
    assert!(elapsed < Duration::from_millis(DEADLINE_MS), "{elapsed:?}");
}

#[test]
fn fault_garbage_on_stdout() {
    let project = FakeProject::new("garbage", &[], DEADLINE_MS);
    let (output, elapsed) = project.write_and_check("a.fake", "ERROR: never seen\n");
    let text = assert_fault(&project, &output, elapsed);
    assert!(text.contains("invalid message(s) on stdout"), "{text}");
}

#[test]
fn fault_flood_that_never_settles() {
    let project = FakeProject::new("flood", &[], DEADLINE_MS);
    let (output, elapsed) = project.write_and_check("a.fake", "ERROR: drowned\n");
    let text = assert_fault(&project, &output, elapsed);
    assert!(text.contains("to settle"), "{text}");
}

#[test]
fn fault_slow_start_past_the_deadline() {
    let project = FakeProject::new("slow-start", &["--delay-ms", "30000"], DEADLINE_MS);
    let (output, elapsed) = project.write_and_check("a.fake", "ERROR: too late\n");
    let text = assert_fault(&project, &output, elapsed);
    assert!(text.contains("the initialize response"), "{text}");
}

/// The library's pool, as a long-lived holder would use it: a warm server
/// gets `didChange`, and one that died is restarted.
#[test]
fn pool_reuses_a_warm_server_and_restarts_a_dead_one() {
    use ralph_hooks::lsp::Pool;

    let dir = TempDir::new("lsp-pool");
    let file = dir.path().join("a.fake");
    std::fs::write(&file, "ERROR: one\n").unwrap();
    let launch = fake_launch(dir.path(), "normal", false);
    let deadline = || Instant::now() + Duration::from_secs(5);
    let mut pool = Pool::default();
    let first = pool
        .diagnose(&launch, &file, "ERROR: one\n", "fake", deadline())
        .unwrap();
    assert_eq!(first.len(), 1);
    let pids = pool.pids();
    let second = pool
        .diagnose(
            &launch,
            &file,
            "ERROR: one\nERROR: two\n",
            "fake",
            deadline(),
        )
        .unwrap();
    assert_eq!(second.len(), 2, "the change was seen");
    assert_eq!(pool.pids(), pids, "the same server answered");
    // The same text again: the warm server's latest publish answers at once
    // (no change sent, so no quiet window to wait out); a different text is
    // sent and seen.
    let started = Instant::now();
    let again = pool
        .diagnose(
            &launch,
            &file,
            "ERROR: one\nERROR: two\n",
            "fake",
            deadline(),
        )
        .unwrap();
    assert_eq!(again, second);
    assert!(
        started.elapsed() < launch.quiet,
        "waited {:?}: a change was sent",
        started.elapsed()
    );
    let changed = pool
        .diagnose(&launch, &file, "ERROR: three\n", "fake", deadline())
        .unwrap();
    assert_eq!(changed.len(), 1);
    assert!(changed[0].message.contains("three"), "{changed:?}");

    ralph_hooks::util::process::kill_group(pids[0]);
    std::thread::sleep(Duration::from_millis(100));
    let third = pool
        .diagnose(&launch, &file, "clean\n", "fake", deadline())
        .unwrap();
    assert!(third.is_empty());
    assert_ne!(pool.pids(), pids, "a new server was started");
    pool.close(Duration::from_millis(500));
}

/// A project whose `.py` files go to the fake server, with one ast-grep rule.
fn ast_grep_project() -> TempDir {
    let dir = TempDir::new("lsp-ast-grep");
    let server = json!({"fake": {
        "command": util::fake_lsp_server().display().to_string(),
        "args": ["--mode", "normal"],
        "extensionToLanguage": {".py": "python"},
    }});
    std::fs::write(dir.path().join(".lsp.json"), server.to_string()).unwrap();
    std::fs::write(dir.path().join("sgconfig.yml"), "ruleDirs:\n  - rules\n").unwrap();
    std::fs::create_dir_all(dir.path().join("rules")).unwrap();
    std::fs::write(
        dir.path().join("rules/no-eval.yml"),
        "id: no-eval\nlanguage: python\nseverity: error\nmessage: Do not call eval\nrule:\n  pattern: eval($A)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.py"),
        "x = 1  # WARN: from the server\ny = eval(\"1+1\")\n",
    )
    .unwrap();
    dir
}

fn write_payload_for(file: &Path) -> Value {
    json!({
        "session_id": "fake-session", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file},
        "tool_response": {"type": "create", "filePath": file, "originalFile": null},
    })
}

#[test]
fn ast_grep_findings_are_merged_with_the_servers_in_process() {
    let dir = ast_grep_project();
    std::fs::write(
        dir.path().join("rules/no-eval.yml"),
        "id: no-eval\nlanguage: python\nseverity: error\nmessage: Do not call eval\nnote: eval runs any code\nrule:\n  pattern: eval($A)\nfix: ast.literal_eval($A)\n",
    )
    .unwrap();
    let mut command = util::command("ralph-post-tool-lsp-diagnostic", dir.path());
    // No ast-grep binary in reach: the engine is built in.
    command.env("PATH", "/usr/bin:/bin");
    let output = util::run_with_stdin(
        command,
        write_payload_for(&dir.path().join("a.py"))
            .to_string()
            .as_bytes(),
    );
    let text = context(&output);
    assert!(text.contains("issues found — 1 error, 1 warning"), "{text}");
    // The project's rule wins over the built-in rule of the same id.
    assert!(
        text.contains("a.py:2:5 error [ast-grep no-eval] Do not call eval"),
        "{text}"
    );
    assert!(
        text.contains("a.py:1:10 warning [fake W1] from the server"),
        "{text}"
    );
    assert!(
        text.contains("- note (no-eval): eval runs any code"),
        "{text}"
    );
    assert!(
        text.contains("- fix for line 2 (no-eval): ast.literal_eval(\"1+1\")"),
        "{text}"
    );
}

#[test]
fn built_in_rules_run_after_an_edit_unless_turned_off() {
    let dir = ast_grep_project();
    std::fs::remove_file(dir.path().join("sgconfig.yml")).unwrap();
    let run = || {
        let command = util::command("ralph-post-tool-lsp-diagnostic", dir.path());
        let output = util::run_with_stdin(
            command,
            write_payload_for(&dir.path().join("a.py"))
                .to_string()
                .as_bytes(),
        );
        assert_eq!(output.status.code(), Some(0));
        context(&output)
    };
    let text = run();
    assert!(
        text.contains("a.py:2:5 warning [ast-grep no-eval] eval() runs a string as code"),
        "{text}"
    );
    assert!(
        text.contains("- note (no-eval): Code built from input and passed to eval() or exec()"),
        "{text}"
    );
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/ralph-hooks.json"),
        r#"{"check": {"ast_grep": {"builtin": false}}}"#,
    )
    .unwrap();
    let text = run();
    assert!(text.contains("issues found — 1 warning"), "{text}");
    assert!(!text.contains("ast-grep"), "{text}");
}

/// Issue 11: a project check re-checks files that did not change. The same
/// text again is answered from the last result, once the server has been
/// quiet after other changes — never by waiting for a publish that a server
/// which publishes only on change never sends.
#[test]
fn unchanged_text_is_answered_without_waiting_for_a_publish() {
    use ralph_hooks::lsp::Pool;

    let dir = TempDir::new("lsp-unchanged");
    let a = dir.path().join("a.fake");
    let b = dir.path().join("b.fake");
    let launch = fake_launch(dir.path(), "silent-if-unchanged", false);
    let deadline = || Instant::now() + Duration::from_secs(3);
    let mut pool = Pool::default();
    let check = |pool: &mut Pool, file: &std::path::Path, text: &str| {
        let started = Instant::now();
        let found = pool
            .diagnose(&launch, file, text, "fake", deadline())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        (found.len(), started.elapsed())
    };
    assert_eq!(check(&mut pool, &a, "clean\n").0, 0);
    assert_eq!(check(&mut pool, &b, "ERROR: b\n").0, 1);
    // Nothing changed: answered at once, clean stays clean.
    let (n, took) = check(&mut pool, &a, "clean\n");
    assert_eq!(n, 0);
    assert!(
        took < Duration::from_secs(2),
        "waited {took:?} for a publish"
    );
    assert_eq!(check(&mut pool, &b, "ERROR: b\n").0, 1, "the error is kept");
    // A real change is still sent and seen.
    assert_eq!(check(&mut pool, &b, "fine\n").0, 0);
    assert_eq!(check(&mut pool, &a, "ERROR: now\n").0, 1);
    pool.close(Duration::from_millis(500));
}

/// typescript-language-server publishes nothing when a clean document
/// changes and stays clean. A server marked `reopen_when_clean` gets such a
/// change as a close and a fresh open, which it always answers; without
/// the mark the same check finds no result (the defect this guards).
#[test]
fn a_clean_document_that_stays_clean_is_reopened_for_a_publish() {
    use ralph_hooks::lsp::{LspError, Pool};

    let dir = TempDir::new("lsp-still-clean");
    let file = dir.path().join("a.fake");
    let launch = |reopen_when_clean: bool| {
        fake_launch(dir.path(), "silent-if-still-clean", reopen_when_clean)
    };
    let deadline = || Instant::now() + Duration::from_secs(3);
    let mut pool = Pool::default();
    let marked = launch(true);
    let mut check = |text: &str| {
        pool.diagnose(&marked, &file, text, "fake", deadline())
            .unwrap_or_else(|e| panic!("{text:?}: {e}"))
            .len()
    };
    assert_eq!(check("clean\n"), 0);
    let started = Instant::now();
    assert_eq!(check("still clean\n"), 0);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(check("ERROR: now\n"), 1, "an error after a reopen is seen");
    assert_eq!(check("ERROR: again\n"), 1);
    assert_eq!(check("clean again\n"), 0);
    assert_eq!(
        check("ERROR: back\n"),
        1,
        "the close's empty publish is not the answer"
    );
    pool.close(Duration::from_millis(500));

    let mut pool = Pool::default();
    let unmarked = launch(false);
    let short = || Instant::now() + Duration::from_millis(800);
    pool.diagnose(&unmarked, &file, "clean\n", "fake", deadline())
        .unwrap();
    let silent = pool.diagnose(&unmarked, &file, "still clean\n", "fake", short());
    assert!(
        matches!(silent, Err(LspError::Timeout { .. })),
        "{silent:?}"
    );
    pool.close(Duration::from_millis(100));
}

/// A fake server's launch for the pool-level tests, with a 50 ms quiet window.
fn fake_launch(
    root: &std::path::Path,
    mode: &str,
    reopen_when_clean: bool,
) -> ralph_hooks::lsp::Launch {
    ralph_hooks::lsp::Launch {
        name: "fake".into(),
        program: util::fake_lsp_server(),
        args: vec!["--mode".into(), mode.into()],
        env: vec![],
        root: root.to_path_buf(),
        initialization_options: None,
        settings: None,
        quiet: Duration::from_millis(50),
        await_progress: None,
        index_progress: None,
        reopen_when_clean,
        mode: ralph_hooks::lsp::DiagnosticMode::Auto,
        pull_capability: ralph_hooks::lsp::PullCapability::Undeclared,
        extensions: vec![".fake".into()],
        created_or_deleted: ralph_hooks::lsp::CreatedOrDeleted::Told,
        reason: None,
    }
}

/// Issue 30 item 5, in process (no daemon): a server that answers
/// `initialize` and never publishes is timed out for the file at the
/// deadline, and the built-in rules' findings still come with it.
#[test]
fn a_silent_server_is_timed_out_and_the_rules_still_report_in_process() {
    let dir = TempDir::new("lsp-silent");
    let server = json!({
        "fake": {
            "command": util::fake_lsp_server().display().to_string(),
            "args": ["--mode", "never-publishes"],
            "extensionToLanguage": {".py": "python"},
        },
        "ruff": {"disabled": true},
    });
    std::fs::write(dir.path().join(".lsp.json"), server.to_string()).unwrap();
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": DEADLINE_MS, "warmup_wait_ms": 0}}),
    );
    let file = dir.path().join("a.py");
    std::fs::write(&file, "x = 1\ny = eval(\"1+1\")\n").unwrap();
    let started = Instant::now();
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", dir.path()),
        write_payload_for(&file).to_string().as_bytes(),
    );
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        elapsed <= Duration::from_millis(DEADLINE_MS) + SLACK,
        "took {elapsed:?}"
    );
    let text = context(&output);
    assert!(text.contains("inconclusive — timed out"), "{text}");
    assert!(text.contains("do not take this as clean"), "{text}");
    assert!(
        text.contains("a.py:2:5 warning [ast-grep no-eval]"),
        "{text}"
    );
}

/// A project rule that does not load checked nothing: `check` says so and
/// exits 2 (something was not checked), never "no problems" with 0, and
/// the post-edit hook tells Claude (engine attack E-8).
#[test]
fn a_rule_that_does_not_load_is_said_in_check_and_the_hook() {
    let dir = ast_grep_project();
    std::fs::write(
        dir.path().join("rules/broken.yml"),
        "id: no-print\nlanguage: python\nseverity: error\nmessage: m\nrule:\n  matches: nowhere-defined\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let output = util::command("ralph-hooks", dir.path())
        .args(["check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("1 rule not loaded"), "{stdout}");
    assert!(stdout.contains("ast-grep: rules/broken.yml"), "{stdout}");

    let mut command = util::command("ralph-post-tool-lsp-diagnostic", dir.path());
    command.env("PATH", "/usr/bin:/bin");
    let output = util::run_with_stdin(
        command,
        write_payload_for(&dir.path().join("a.py"))
            .to_string()
            .as_bytes(),
    );
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("a project rule did not load, so it checked nothing: rules/broken.yml"),
        "{context}"
    );

    // A loop does not complete over it either (re-attack RE-5).
    util::start_loop(
        dir.path(),
        "rule-session",
        &["x", "--check", "true", "--diagnostics", "project"],
    );
    let decision = util::stop_hook(dir.path(), "rule-session");
    assert_eq!(decision["decision"], "block", "{decision}");
    let reason = decision["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("did not load"), "{reason}");
}

/// A project rule for a language the built-in engine does not parse
/// (Ruby, Java, …) applies to no file it checks: `check` is not made
/// inconclusive by it (re-attack RE-6), and `doctor` says it was left out.
#[test]
fn a_rule_for_a_language_the_engine_does_not_parse_is_left_out_not_a_problem() {
    let dir = ast_grep_project();
    std::fs::write(
        dir.path().join("rules/ruby.yml"),
        "id: r-ruby\nlanguage: ruby\nseverity: error\nmessage: m\nrule:\n  pattern: zzz_never_here\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let output = util::command("ralph-hooks", dir.path())
        .args(["check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("not loaded"), "{stdout}");
    let doctor = util::command("ralph-hooks", dir.path())
        .args(["doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("left out (no file here they could check)"),
        "{text}"
    );
}
