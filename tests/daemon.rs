//! The warm-server daemon (issue 6) through the real binaries, with the
//! scripted fake language server (and real pyright, when installed): reuse,
//! idle shutdown, crash and restart, the restart bound, a hung server, a
//! frozen daemon, racing hooks, a stale socket and record, a daemon of
//! another build, a daemon killed mid-request, config changes, the memory
//! ceiling, pre-start and long state roots.
//!
//! Every test has its own project, hence its own state root and socket, so
//! tests run in parallel without meeting each other's daemon. A guard stops
//! the daemon and kills whatever is left in the project even when a test
//! fails, and each test ends by asserting that no process runs in (or names)
//! its project directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// The per-file deadline most tests configure.
const DEADLINE_MS: u64 = 5_000;
/// The daemon's start budget in tests that are not about starting it.
const START_BUDGET_MS: u64 = 60_000;
/// How much later than its deadline a hook may return.
const SLACK: Duration = Duration::from_millis(500);

/// A project whose daemon is stopped, and whose processes are killed, when
/// it is dropped.
struct Project {
    dir: TempDir,
    /// The `ralph-hooks` binary hooks should start the daemon from.
    cli: Option<PathBuf>,
}

/// One hook run.
struct Check {
    output: Output,
    elapsed: Duration,
}

impl Check {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn context(&self) -> String {
        let stdout = String::from_utf8_lossy(&self.output.stdout);
        let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {stdout:?}; stderr: {}",
                self.stderr()
            )
        });
        value["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_else(|| panic!("no additionalContext in {value}"))
            .to_string()
    }

    fn assert_ok(&self) {
        assert_eq!(
            self.output.status.code(),
            Some(0),
            "stderr: {}",
            self.stderr()
        );
    }

    fn served_by_daemon(&self) -> bool {
        self.stderr().contains("[DEBUG] daemon: fake answered")
    }
}

/// The `.lsp.json` entry of a fake server, started through a wrapper that
/// appends its pid to `spawns.log` (so tests count server starts).
fn fake_server(dir: &Path, mode: &str, extra_args: &[&str], extension: &str) -> Value {
    let wrapper = dir.join("fake-server.sh");
    if !wrapper.exists() {
        let script = format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec '{}' \"$@\"\n",
            dir.join("spawns.log").display(),
            util::fake_lsp_server().display()
        );
        std::fs::write(&wrapper, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut args = vec![json!("--mode"), json!(mode), json!("--helper")];
    args.extend(extra_args.iter().map(|a| json!(a)));
    json!({
        "command": wrapper.display().to_string(),
        "args": args,
        "extensionToLanguage": {extension: "fake"},
        "quietMs": 30,
    })
}

impl Project {
    fn new(mode: &str, extra_args: &[&str], timeout_ms: u64, daemon: Value) -> Project {
        let dir = TempDir::new("daemon");
        let servers = json!({"fake": fake_server(dir.path(), mode, extra_args, ".fake")});
        Project::with_servers(dir, &servers, timeout_ms, daemon)
    }

    fn with_servers(dir: TempDir, servers: &Value, timeout_ms: u64, mut daemon: Value) -> Project {
        // Starting the daemon is not what most tests are about: a loaded
        // machine must not turn a slow start into a fallback they fail on.
        if daemon.get("start_timeout_ms").is_none() {
            daemon["start_timeout_ms"] = json!(START_BUDGET_MS);
        }
        std::fs::write(dir.path().join(".lsp.json"), servers.to_string()).unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/ralph-hooks.json"),
            json!({"diagnostics": {"timeout_ms": timeout_ms, "ast_grep": false}, "daemon": daemon})
                .to_string(),
        )
        .unwrap();
        Project { dir, cli: None }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn state(&self) -> PathBuf {
        self.path().join(".claude/orchestrator")
    }

    /// A hook with the daemon on and `[DEBUG]` output.
    fn hook(&self, binary: &str) -> Command {
        let mut command = util::command(binary, self.path());
        command
            .env_remove("RALPH_HOOKS_DAEMON")
            .env("RALPH_HOOKS_DEBUG", "1");
        if let Some(cli) = &self.cli {
            command.env("RALPH_HOOKS_CLI", cli);
        }
        command
    }

    /// Writes `relative` and runs the post-tool hook on the Write.
    fn check(&self, relative: &str, text: &str) -> Check {
        let file = self.path().join(relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let payload = json!({
            "session_id": "daemon-session",
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": file, "content": text},
            "tool_response": {"type": "create", "filePath": file, "originalFile": null},
        });
        let started = Instant::now();
        let output = util::run_with_stdin(
            self.hook("ralph-post-tool-lsp-diagnostic"),
            payload.to_string().as_bytes(),
        );
        Check {
            output,
            elapsed: started.elapsed(),
        }
    }

    /// Writes `relative` as a shell command would and runs the post-tool
    /// hook on the Bash command's PostToolUse.
    fn bash(&self, relative: &str, text: &str) -> Check {
        let file = self.path().join(relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let payload = json!({
            "session_id": "daemon-session",
            "hook_event_name": "PostToolUse",
            "cwd": self.path(),
            "tool_name": "Bash",
            "tool_input": {"command": format!("generate {relative}")},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
        });
        let started = Instant::now();
        let output = util::run_with_stdin(
            self.hook("ralph-post-tool-lsp-diagnostic"),
            payload.to_string().as_bytes(),
        );
        Check {
            output,
            elapsed: started.elapsed(),
        }
    }

    fn cli(&self, args: &[&str]) -> Output {
        let mut command = util::command("ralph-hooks", self.path());
        if let Some(cli) = &self.cli {
            command.env("RALPH_HOOKS_CLI", cli);
        }
        command.args(args).output().unwrap()
    }

    /// `daemon status --json`'s status, or `None` when not running.
    fn status(&self) -> Option<Value> {
        let output = self.cli(&["daemon", "status", "--json"]);
        let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "status is not JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        });
        (value["running"] == true).then(|| value["status"].clone())
    }

    /// The pids the wrapper recorded, one per server start.
    fn spawns(&self) -> Vec<u32> {
        std::fs::read_to_string(self.path().join("spawns.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    fn record(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.state().join("daemon/daemon.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn daemon_pid(&self) -> u32 {
        let record = self.record().expect("a daemon record");
        record["pid"].as_u64().expect("a pid in the record") as u32
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.state().join("daemon/daemon.log")).unwrap_or_default()
    }

    /// Stops the daemon and asserts that nothing runs in the project.
    fn finish(&self) {
        let output = self.cli(&["daemon", "stop"]);
        assert!(
            output.status.success(),
            "daemon stop failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_nothing_left(self.path());
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.cli(&["daemon", "stop"]);
        for (pid, _) in processes_in(self.path()) {
            signal(pid, libc::SIGCONT);
            signal(pid, libc::SIGKILL);
        }
    }
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Live processes whose working directory is in `dir` or whose command line
/// names it: the daemon (`--project DIR`), servers and their helpers.
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let zombie = stat
            .rfind(')')
            .is_some_and(|at| stat[at + 1..].trim_start().starts_with('Z'));
        if zombie {
            continue;
        }
        let cwd_inside =
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir));
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        if cwd_inside || cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

fn assert_nothing_left(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_in(dir);
        if left.is_empty() {
            return;
        }
        if Instant::now() > until {
            panic!("processes still running in {}: {left:#?}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rfind(')')
            .is_some_and(|at| stat[at + 1..].trim_start().starts_with('Z'))
    })
}

/// Polls `condition` for up to `timeout`.
fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn daemons_for(dir: &Path) -> Vec<(u32, String)> {
    processes_in(dir)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains(" daemon run"))
        .collect()
}

#[test]
fn one_server_serves_many_checks() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    for round in 0..5 {
        let check = project.check("src/a.fake", &format!("ok\nERROR: round {round}\n"));
        check.assert_ok();
        assert!(
            check
                .context()
                .contains(&format!("src/a.fake:2:1 error [fake E1] round {round}")),
            "{}",
            check.context()
        );
        assert!(check.served_by_daemon(), "{}", check.stderr());
        let expected = if round == 0 { "(cold start)" } else { "(warm)" };
        assert!(check.stderr().contains(expected), "{}", check.stderr());
    }
    assert_eq!(
        project.spawns().len(),
        1,
        "one server start for five checks"
    );
    let status = project.status().expect("the daemon runs");
    assert_eq!(status["requests"], 5);
    let server = &status["servers"][0];
    assert_eq!(server["name"], "fake");
    assert_eq!(server["requests"], 5);
    assert_eq!(server["warm_requests"], 4);
    assert_eq!(server["pid"], project.spawns()[0]);
    assert!(server["rss_kib"].as_u64().unwrap() > 0, "{status}");
    assert!(
        status["tree_rss_kib"].as_u64() > status["rss_kib"].as_u64(),
        "{status}"
    );
    project.finish();
}

#[test]
fn idle_server_is_shut_down_then_the_idle_daemon_exits() {
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"server_idle_ms": 400, "exit_idle_ms": 1500}),
    );
    let check = project.check("a.fake", "ERROR: once\n");
    assert!(check.served_by_daemon(), "{}", check.stderr());
    let server = project.spawns()[0];
    let daemon = project.daemon_pid();
    assert!(
        eventually(Duration::from_secs(5), || !alive(server)),
        "the idle server is still running"
    );
    assert!(project.log().contains("idle for"), "{}", project.log());
    assert!(
        eventually(Duration::from_secs(8), || !alive(daemon)),
        "the daemon did not exit when idle"
    );
    assert!(project.log().contains("no servers and no requests"));
    assert!(project.record().is_none(), "the record is removed");
    assert!(
        !project.state().join("daemon/daemon.sock").exists(),
        "the socket is removed"
    );
    assert_nothing_left(project.path());
}

#[test]
fn files_not_checked_for_a_while_are_closed() {
    // Long enough that a loaded machine does not close `a` before `b` is
    // checked and the status read (300 ms did, under a parallel test run).
    let project = Project::new("normal", &[], DEADLINE_MS, json!({"file_idle_ms": 2000}));
    project.check("a.fake", "ERROR: one\n");
    project.check("b.fake", "ERROR: two\n");
    let open_files = || project.status().unwrap()["servers"][0]["open_files"].clone();
    assert_eq!(open_files(), 2);
    assert!(eventually(Duration::from_secs(10), || open_files() == 0));
    // A closed file is opened again by its next check, on the same server.
    let check = project.check("a.fake", "ERROR: three\n");
    assert!(check.context().contains("three"), "{}", check.context());
    assert_eq!(project.spawns().len(), 1);
    project.finish();
}

#[test]
fn a_crashed_server_is_restarted_by_the_next_check() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    project.check("a.fake", "ERROR: before\n");
    let first = project.spawns()[0];
    ralph_hooks::util::process::kill_group(first);
    assert!(eventually(Duration::from_secs(2), || !alive(first)));
    let check = project.check("a.fake", "ERROR: after the crash\n");
    check.assert_ok();
    assert!(
        check
            .context()
            .contains("a.fake:1:1 error [fake E1] after the crash"),
        "{}",
        check.context()
    );
    let spawns = project.spawns();
    assert_eq!(spawns.len(), 2, "{spawns:?}");
    let status = project.status().unwrap();
    assert_eq!(status["servers"][0]["restarts"], 1, "{status}");
    assert_eq!(status["servers"][0]["pid"], spawns[1]);
    assert!(
        project.log().contains("restarted fake"),
        "{}",
        project.log()
    );
    project.finish();
}

#[test]
fn a_server_that_keeps_crashing_is_not_restarted_past_the_bound() {
    let project = Project::new(
        "crash",
        &[],
        DEADLINE_MS,
        json!({"max_restarts_per_minute": 2}),
    );
    for _ in 0..2 {
        let check = project.check("a.fake", "ERROR: never seen\n");
        check.assert_ok();
        assert!(
            check.context().contains("the server exited"),
            "{}",
            check.context()
        );
    }
    let check = project.check("a.fake", "ERROR: never seen\n");
    check.assert_ok();
    let text = check.context();
    assert!(text.contains("inconclusive"), "{text}");
    assert!(
        text.contains(
            "2 crashes or hangs within a minute; the ralph-hooks daemon starts it again in"
        ),
        "{text}"
    );
    assert_eq!(
        project.spawns().len(),
        2,
        "no third start within the minute"
    );
    let status = project.status().unwrap();
    assert!(
        status["servers"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("crashes or hangs"),
        "{status}"
    );
    project.finish();
}

#[test]
fn a_hung_server_answers_inconclusive_within_the_deadline() {
    let deadline = 1_500;
    // Warm first (a server that never answered its first check is warming
    // up, not hung: see the warm-up tests), then hung.
    // A server silent for half a second with a check waiting is hung here
    // (the default is 30 s, for whole-project re-analyses).
    let project = Project::new(
        "hang-after-first",
        &[],
        deadline,
        json!({"hung_after_ms": 500}),
    );
    let first = project.check("a.fake", "ERROR: seen\n");
    assert!(first.context().contains("seen"), "{}", first.context());
    let check = project.check("a.fake", "ERROR: never seen\n");
    check.assert_ok();
    assert!(
        check.elapsed <= Duration::from_millis(deadline) + SLACK,
        "took {:?}",
        check.elapsed
    );
    let text = check.context();
    assert!(text.contains("inconclusive"), "{text}");
    assert!(text.contains("no result within"), "{text}");
    assert!(
        check.stderr().contains("fake failed in the daemon"),
        "{}",
        check.stderr()
    );
    // The hung server was killed; the daemon stays usable.
    let hung = project.spawns()[0];
    assert!(eventually(Duration::from_secs(2), || !alive(hung)));
    assert!(project.status().is_some());
    project.finish();
}

/// Rewrites the project's config: `diagnostics` and `daemon` sections, and
/// extra fields of the fake server's `.lsp.json` entry.
fn reconfigure(project: &Project, diagnostics: Value, daemon: Value, server: Value) {
    std::fs::write(
        project.path().join(".claude/ralph-hooks.json"),
        json!({"diagnostics": diagnostics, "daemon": daemon}).to_string(),
    )
    .unwrap();
    let path = project.path().join(".lsp.json");
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for (key, value) in server.as_object().unwrap() {
        servers["fake"][key] = value.clone();
    }
    std::fs::write(&path, servers.to_string()).unwrap();
}

#[test]
fn a_server_slow_to_start_is_warming_up_not_broken() {
    // Start-up (4 s) is longer than two edits' file time (1 s) plus the
    // warm-up wait (0.5 s): the first edits are told "warming up", the
    // server is neither killed nor restart-limited (bound 1), and the next
    // edit gets a real answer from the same, now warm, server.
    let project = Project::new("slow-start", &["--delay-ms", "4000"], 1_000, json!({}));
    reconfigure(
        &project,
        json!({"timeout_ms": 1_000, "warmup_wait_ms": 500, "ast_grep": false}),
        json!({"max_restarts_per_minute": 1}),
        json!({}),
    );
    for _ in 0..2 {
        let check = project.check("a.fake", "ERROR: later\n");
        check.assert_ok();
        let text = check.context();
        assert!(
            text.contains("warming up"),
            "{text}\n{}\n{}",
            check.stderr(),
            std::fs::read_to_string(project.state().join("daemon/daemon.log")).unwrap_or_default()
        );
        assert!(text.contains("checked on the next edit"), "{text}");
        assert!(!text.contains("inconclusive"), "{text}");
        assert!(
            check.elapsed <= Duration::from_millis(1_500) + SLACK,
            "took {:?}",
            check.elapsed
        );
    }
    // The check the hooks stopped waiting for goes on in the daemon until
    // the server is up; the next edit then finds it warm.
    assert!(eventually(Duration::from_secs(15), || {
        project
            .status()
            .is_some_and(|status| status["servers"][0]["warming"] == false)
    }));
    let check = project.check("a.fake", "ERROR: answered\n");
    assert!(
        check
            .context()
            .contains("a.fake:1:1 error [fake E1] answered"),
        "{}",
        check.context()
    );
    assert_eq!(
        project.spawns().len(),
        1,
        "never restarted for a slow start"
    );
    project.finish();
}

#[test]
fn the_text_before_the_edit_is_checked_after_the_start_up() {
    // Start-up 1.2 s, file time 1 s: the old text's share (0.6 s) counts
    // from when the server is up, so the first Edit of an existing file
    // still tells what it introduced.
    let project = Project::new("slow-start", &["--delay-ms", "1200"], 1_000, json!({}));
    reconfigure(
        &project,
        json!({"timeout_ms": 1_000, "warmup_wait_ms": 5_000, "ast_grep": false}),
        json!({}),
        json!({}),
    );
    let file = project.path().join("a.fake");
    std::fs::write(&file, "ERROR: old one\nERROR: new one\n").unwrap();
    let input = json!({
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "cwd": project.path(),
        "tool_name": "Edit",
        "tool_input": {"file_path": file},
        "tool_response": {"filePath": file, "originalFile": "ERROR: old one\nfine\n"},
    });
    let started = Instant::now();
    let output = util::run_with_stdin(
        project.hook("ralph-post-tool-lsp-diagnostic"),
        input.to_string().as_bytes(),
    );
    let check = Check {
        output,
        elapsed: started.elapsed(),
    };
    check.assert_ok();
    let text = check.context();
    assert!(text.contains("new one"), "{text}");
    assert!(!text.contains("warming up"), "{text}");
    assert!(text.contains("Introduced by this edit (1)"), "{text}");
    assert!(
        text.contains("Already there before this edit (1)"),
        "{text}"
    );
    assert!(
        !check.stderr().contains("could not check the text before"),
        "{}",
        check.stderr()
    );
    project.finish();
}

#[test]
fn a_server_that_never_warms_up_is_stopped_after_its_startup_timeout_but_not_restart_limited() {
    // `hang` answers initialize, then nothing: it never gets through its
    // first check. The hook waits its warm-up wait and says the file is not
    // checked yet; the daemon gives the server its start-up time (1.5 s) and
    // stops it then, but a slow start does not count toward the restart
    // bound (1): the next edit starts it again.
    let project = Project::new("hang", &[], 800, json!({}));
    reconfigure(
        &project,
        json!({"timeout_ms": 800, "warmup_wait_ms": 200, "ast_grep": false}),
        json!({"max_restarts_per_minute": 1}),
        json!({"startupTimeout": 1_500}),
    );
    for round in 1..=2 {
        let check = project.check("a.fake", "ERROR: never seen\n");
        let text = check.context();
        assert!(
            text.contains("warming up") || text.contains("inconclusive"),
            "{text}"
        );
        assert!(text.contains("do not take this as clean"), "{text}");
        assert!(!text.contains("crashes or hangs"), "{text}");
        assert!(
            check.elapsed <= Duration::from_millis(1_700) + SLACK,
            "took {:?}",
            check.elapsed
        );
        assert_eq!(project.spawns().len(), round);
        let pid = project.spawns()[round - 1];
        assert!(eventually(Duration::from_secs(3), || !alive(pid)));
    }
    project.finish();
}

#[test]
fn a_frozen_daemon_is_not_waited_for() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    assert!(project.check("a.fake", "ERROR: one\n").served_by_daemon());
    let daemon = project.daemon_pid();
    signal(daemon, libc::SIGSTOP);
    let check = project.check("a.fake", "ERROR: checked in the hook\n");
    signal(daemon, libc::SIGCONT);
    check.assert_ok();
    assert!(
        check
            .context()
            .contains("a.fake:1:1 error [fake E1] checked in the hook"),
        "{}",
        check.context()
    );
    let stderr = check.stderr();
    assert!(stderr.contains("the daemon is not answering"), "{stderr}");
    assert!(
        stderr.contains("falling back to an in-process check"),
        "{stderr}"
    );
    // Waiting on the daemon would have lasted until the deadline.
    assert!(
        check.elapsed < Duration::from_millis(DEADLINE_MS),
        "{:?}",
        check.elapsed
    );
    // Awake again, it serves the next check.
    assert!(project.check("a.fake", "ERROR: three\n").served_by_daemon());
    project.finish();
}

#[test]
fn racing_hooks_start_one_daemon() {
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"start_timeout_ms": 10000}),
    );
    let checks: Vec<Check> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|n| {
                let project = &project;
                scope.spawn(move || {
                    project.check(&format!("f{n}.fake"), &format!("ERROR: file {n}\n"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (n, check) in checks.iter().enumerate() {
        check.assert_ok();
        assert!(
            check
                .context()
                .contains(&format!("error [fake E1] file {n}")),
            "{}",
            check.context()
        );
        assert!(check.served_by_daemon(), "{}", check.stderr());
    }
    let started = checks
        .iter()
        .filter(|c| c.stderr().contains("started daemon"))
        .count();
    assert_eq!(started, 1, "exactly one hook started the daemon");
    assert_eq!(daemons_for(project.path()).len(), 1);
    assert_eq!(project.spawns().len(), 1, "one server for all six");
    project.finish();
}

#[test]
fn a_stale_socket_and_record_are_cleaned_up() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    let daemon_dir = project.state().join("daemon");
    std::fs::create_dir_all(&daemon_dir).unwrap();
    // A socket nobody listens on, as a killed daemon leaves it.
    drop(std::os::unix::net::UnixListener::bind(daemon_dir.join("daemon.sock")).unwrap());
    // A leftover "server" in its own process group, and a dead daemon pid.
    let mut leftover = {
        use std::os::unix::process::CommandExt;
        Command::new("sleep")
            .arg("300")
            .current_dir(project.path())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let start_time = ralph_hooks::daemon::procs::stat(leftover.id())
        .unwrap()
        .start_time;
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(
        daemon_dir.join("daemon.json"),
        json!({
            "version": 1, "pid": dead_pid, "start_time": 1, "build": "old",
            "socket": daemon_dir.join("daemon.sock"), "project": project.path(),
            "started_at": "2026-11-21T11:00:00Z",
            "servers": [{"name": "fake", "root": project.path(), "pid": leftover.id(), "start_time": start_time}]
        })
        .to_string(),
    )
    .unwrap();

    let check = project.check("a.fake", "ERROR: fresh\n");
    check.assert_ok();
    assert!(check.served_by_daemon(), "{}", check.stderr());
    assert!(check.context().contains("fresh"));
    let status = leftover.wait().unwrap();
    assert!(!status.success(), "the leftover was killed: {status}");
    let log = project.log();
    assert!(
        log.contains("cleaned up: killed the leftover fake server"),
        "{log}"
    );
    assert!(
        log.contains(&format!("removed the record of daemon {dead_pid}")),
        "{log}"
    );
    assert!(log.contains("removed the stale socket"), "{log}");
    assert_ne!(project.daemon_pid(), dead_pid);
    project.finish();
}

#[test]
fn a_daemon_of_another_build_is_replaced() {
    let mut project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"start_timeout_ms": 10000}),
    );
    let cli = project.path().join("bin/ralph-hooks");
    std::fs::create_dir_all(cli.parent().unwrap()).unwrap();
    std::fs::copy(util::bin("ralph-hooks"), &cli).unwrap();
    project.cli = Some(cli.clone());
    let first = project.check("a.fake", "ERROR: one\n");
    assert!(first.served_by_daemon(), "{}", first.stderr());
    let old = project.daemon_pid();
    let old_build = project.status().unwrap()["build"].clone();

    // A new build of ralph-hooks lands at the same path, the way installers
    // replace a running binary: a new file renamed over the old one.
    let staged = cli.with_extension("new");
    std::fs::copy(util::bin("ralph-hooks"), &staged).unwrap();
    std::fs::rename(&staged, &cli).unwrap();

    let check = project.check("a.fake", "ERROR: two\n");
    check.assert_ok();
    assert!(check.served_by_daemon(), "{}", check.stderr());
    assert!(check.context().contains("two"));
    assert!(
        check.stderr().contains(&format!(
            "replaced daemon {old} of build {}",
            old_build.as_str().unwrap()
        )),
        "{}",
        check.stderr()
    );
    let new = project.daemon_pid();
    assert_ne!(new, old);
    assert!(eventually(Duration::from_secs(3), || !alive(old)));
    assert_ne!(project.status().unwrap()["build"], old_build);
    assert_eq!(daemons_for(project.path()).len(), 1);
    project.finish();
}

#[test]
fn a_daemon_killed_mid_request_falls_back_and_its_leftovers_are_cleaned() {
    let project = Project::new("slow-start", &["--delay-ms", "1500"], 8_000, json!({}));
    let check = std::thread::scope(|scope| {
        let running = scope.spawn(|| project.check("a.fake", "ERROR: survived\n"));
        // Kill the daemon while its server is still starting.
        assert!(
            eventually(Duration::from_secs(5), || !project.spawns().is_empty()),
            "the daemon never started a server"
        );
        signal(project.daemon_pid(), libc::SIGKILL);
        running.join().unwrap()
    });
    check.assert_ok();
    assert!(
        check
            .context()
            .contains("a.fake:1:1 error [fake E1] survived"),
        "{}",
        check.context()
    );
    let stderr = check.stderr();
    assert!(stderr.contains("failed during the check"), "{stderr}");
    assert!(
        stderr.contains("falling back to an in-process check"),
        "{stderr}"
    );
    assert!(check.elapsed < Duration::from_millis(8_000) + SLACK);

    // The killed daemon's server (and its helper) outlived it; the next
    // daemon cleans them up before it starts.
    let orphan = project.spawns()[0];
    let next = project.check("a.fake", "ERROR: next\n");
    assert!(next.served_by_daemon(), "{}", next.stderr());
    assert!(
        eventually(Duration::from_secs(2), || util::live_processes_in_group(
            orphan
        )
        .is_empty()),
        "the killed daemon's server group is still there"
    );
    project.finish();
}

/// `daemon stop` from another terminal while a `check` waits on the
/// daemon: the check is done without it, with the answer a cold check
/// gives (attack AE-13: "the time budget ran out", files "not checked
/// yet, it goes on in the daemon", exit 2).
#[test]
fn a_check_whose_daemon_is_stopped_meanwhile_is_done_without_it() {
    let project = Project::new("slow-files", &["--delay-ms", "2500"], 20_000, json!({}));
    std::fs::write(project.path().join("a.fake"), "ERROR: found\n").unwrap();
    let check = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            let mut command = util::command("ralph-hooks", project.path());
            command
                .env_remove("RALPH_HOOKS_DAEMON")
                .args(["check", "--no-ast-grep"]);
            command.output().unwrap()
        });
        assert!(
            eventually(Duration::from_secs(5), || !project.spawns().is_empty()),
            "the daemon never started a server"
        );
        let stop = project.cli(&["daemon", "stop"]);
        assert!(stop.status.success(), "{stop:?}");
        running.join().unwrap()
    });
    let out = String::from_utf8_lossy(&check.stdout);
    let err = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("a.fake:1:1 error [fake E1] found"), "{out}");
    assert!(out.contains("(0 inconclusive"), "{out}");
    project.finish();
}

#[test]
fn a_config_change_restarts_the_server() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    project.check("a.fake", "ERROR: one\n");
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".lsp.json")).unwrap())
            .unwrap();
    servers["fake"]["quietMs"] = json!(40);
    std::fs::write(project.path().join(".lsp.json"), servers.to_string()).unwrap();
    let check = project.check("a.fake", "ERROR: two\n");
    assert!(
        check.stderr().contains("(cold start)"),
        "{}",
        check.stderr()
    );
    assert!(check.context().contains("two"));
    assert_eq!(project.spawns().len(), 2);
    assert!(
        project.log().contains("the configuration of fake changed"),
        "{}",
        project.log()
    );
    // Unchanged since: warm again.
    assert!(
        project
            .check("a.fake", "ERROR: three\n")
            .stderr()
            .contains("(warm)")
    );
    project.finish();
}

#[test]
fn over_the_memory_ceiling_the_least_recently_used_server_goes() {
    let dir = TempDir::new("daemon");
    let servers = json!({
        "fake-a": fake_server(dir.path(), "normal", &[], ".fa"),
        "fake-b": fake_server(dir.path(), "normal", &[], ".fb"),
    });
    // 1 MB: always exceeded; the server in use stays.
    let project = Project::with_servers(dir, &servers, DEADLINE_MS, json!({"memory_limit_mb": 1}));
    assert!(
        project
            .check("a.fa", "ERROR: a\n")
            .context()
            .contains("error")
    );
    assert!(
        project
            .check("b.fb", "ERROR: b\n")
            .context()
            .contains("error")
    );
    let spawns = project.spawns();
    assert_eq!(spawns.len(), 2);
    assert!(
        eventually(Duration::from_secs(5), || !alive(spawns[0])),
        "the least recently used server is still running"
    );
    let status = project.status().unwrap();
    assert!(status["evictions"].as_u64().unwrap() >= 1, "{status}");
    let running: Vec<&str> = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["pid"].is_null())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(running, ["fake-b"], "{status}");
    assert!(
        project.log().contains("memory ceiling"),
        "{}",
        project.log()
    );
    project.finish();
}

#[test]
fn session_start_prestarts_the_servers_the_project_used() {
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"start_timeout_ms": 10000}),
    );
    let session_start = || {
        util::run_with_stdin(
            project.hook("ralph-session-start"),
            br#"{"hook_event_name":"SessionStart","session_id":"s2","source":"startup"}"#,
        )
    };
    // Nothing used yet: no daemon.
    let output = session_start();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no server used here yet and no language detected"),
        "{stderr}"
    );
    assert!(project.status().is_none());

    project.check("a.fake", "ERROR: one\n");
    project.cli(&["daemon", "stop"]);
    assert!(project.status().is_none());
    let output = session_start();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("pre-starting fake"), "{stderr}");
    assert!(
        eventually(Duration::from_secs(5), || project.spawns().len() == 2),
        "the server was not pre-started"
    );
    let check = project.check("a.fake", "ERROR: two\n");
    assert!(check.stderr().contains("(warm)"), "{}", check.stderr());
    // A running daemon is asked to pre-start; a running server is kept.
    let output = session_start();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("pre-starting fake in daemon"), "{stderr}");
    assert_eq!(project.spawns().len(), 2);
    project.finish();
}

#[test]
fn session_start_prestarts_the_servers_of_the_languages_the_project_contains() {
    // A `.fake` file near the root and no server ever used: pre-started
    // anyway (issue 11), unless `prestart_detect` is off.
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"start_timeout_ms": 10000, "prestart_detect": false}),
    );
    std::fs::create_dir_all(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/a.fake"), "ERROR: one\n").unwrap();
    let session_start = || {
        let started = Instant::now();
        let output = util::run_with_stdin(
            project.hook("ralph-session-start"),
            br#"{"hook_event_name":"SessionStart","session_id":"s3","source":"startup"}"#,
        );
        assert!(output.status.success());
        (
            String::from_utf8_lossy(&output.stderr).into_owned(),
            started.elapsed(),
        )
    };
    let (stderr, _) = session_start();
    assert!(stderr.contains("no language detected"), "{stderr}");
    assert!(project.status().is_none());

    reconfigure(
        &project,
        json!({"timeout_ms": DEADLINE_MS, "ast_grep": false}),
        json!({"start_timeout_ms": 10000}),
        json!({}),
    );
    let (stderr, elapsed) = session_start();
    assert!(stderr.contains("pre-starting fake"), "{stderr}");
    // The hook does not wait for the daemon or the server.
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert!(
        eventually(Duration::from_secs(5), || project.spawns().len() == 1),
        "the server was not pre-started"
    );
    let check = project.check("src/a.fake", "ERROR: two\n");
    assert!(check.stderr().contains("(warm)"), "{}", check.stderr());
    assert_eq!(project.spawns().len(), 1);
    project.finish();
}

/// A daemon just started gets the start budget for its first handshake,
/// not `connect_timeout_ms`: on a busy machine it answers late, and that
/// is slowness, not sickness. With a 1 ms handshake wait, only the start
/// budget lets the hook use it.
#[test]
fn a_daemon_just_started_gets_the_start_budget_for_its_handshake() {
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"connect_timeout_ms": 1, "start_timeout_ms": START_BUDGET_MS}),
    );
    let check = project.check("a.fake", "ERROR: first\n");
    check.assert_ok();
    assert!(check.served_by_daemon(), "{}", check.stderr());
    assert!(
        !check.stderr().contains("not answering"),
        "{}",
        check.stderr()
    );
    project.finish();
}

#[test]
fn a_long_state_root_puts_the_socket_in_the_runtime_dir() {
    let dir = TempDir::new("daemon");
    let deep = dir
        .path()
        .join("a-rather-long-directory-name-for-a-project-that-nests".repeat(2));
    std::fs::create_dir_all(&deep).unwrap();
    let servers = json!({"fake": fake_server(dir.path(), "normal", &[], ".fake")});
    std::fs::write(deep.join(".lsp.json"), servers.to_string()).unwrap();
    std::fs::create_dir_all(deep.join(".claude")).unwrap();
    std::fs::write(
        deep.join(".claude/ralph-hooks.json"),
        json!({"diagnostics": {"timeout_ms": DEADLINE_MS},
               "daemon": {"start_timeout_ms": START_BUDGET_MS}})
        .to_string(),
    )
    .unwrap();
    let project = Project { dir, cli: None };
    let dir = project.path();
    let mut command = project.hook("ralph-post-tool-lsp-diagnostic");
    command.env("CLAUDE_PROJECT_DIR", &deep).current_dir(&deep);
    let file = deep.join("a.fake");
    std::fs::write(&file, "ERROR: deep\n").unwrap();
    let payload = json!({
        "session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file}, "tool_response": {"type": "create", "originalFile": null},
    });
    let output = util::run_with_stdin(command, payload.to_string().as_bytes());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("[DEBUG] daemon: fake answered"), "{stderr}");
    let status_output = util::command("ralph-hooks", &deep)
        .args(["daemon", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status_output.stdout).unwrap();
    let socket = PathBuf::from(status["status"]["socket"].as_str().unwrap());
    assert!(!socket.starts_with(dir), "{}", socket.display());
    assert!(socket.as_os_str().len() <= 107);
    let stop = util::command("ralph-hooks", &deep)
        .args(["daemon", "stop"])
        .output()
        .unwrap();
    assert!(stop.status.success());
    assert!(!socket.exists(), "the socket is removed");
    assert_nothing_left(project.path());
}

/// Real pyright: the first check starts it, the second is served warm by
/// the same server.
#[test]
fn pyright_second_check_is_served_warm() {
    let Some(_) = util::require_tool("pyright-langserver", "the warm pyright daemon test") else {
        return;
    };
    let dir = TempDir::new("daemon-pyright");
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/ralph-hooks.json"),
        json!({"diagnostics": {"timeout_ms": 30_000, "ast_grep": false}}).to_string(),
    )
    .unwrap();
    let project = Project { dir, cli: None };
    let source = |value: &str| {
        format!(
            "def add(a: int, b: int) -> int:\n    return a + b\n\n\nresult: str = add(1, {value})\n"
        )
    };
    let first = project.check("app.py", &source("2"));
    first.assert_ok();
    assert!(
        first.stderr().contains("pyright answered (cold start)"),
        "{}",
        first.stderr()
    );
    let second = project.check("app.py", &source("3"));
    second.assert_ok();
    let text = second.context();
    assert!(
        text.contains("app.py:5:15 error [Pyright reportAssignmentType]"),
        "{text}"
    );
    assert!(
        second.stderr().contains("pyright answered (warm)"),
        "{}",
        second.stderr()
    );
    eprintln!(
        "pyright through the daemon: cold {:?}, warm {:?}",
        first.elapsed, second.elapsed
    );
    project.finish();
}

#[test]
fn a_daemon_that_cannot_start_is_not_waited_for() {
    // A start timeout far above the deadline: only noticing the exit keeps
    // the hook quick.
    let project = Project::new(
        "normal",
        &[],
        DEADLINE_MS,
        json!({"start_timeout_ms": 60000}),
    );
    std::fs::create_dir_all(project.state()).unwrap();
    // The daemon's directory is a file: it cannot create its socket.
    std::fs::write(project.state().join("daemon"), "not a directory").unwrap();
    let check = project.check("a.fake", "ERROR: checked in the hook\n");
    check.assert_ok();
    assert!(check.context().contains("checked in the hook"));
    let stderr = check.stderr();
    assert!(stderr.contains("exited at once"), "{stderr}");
    assert!(
        stderr.contains("falling back to an in-process check"),
        "{stderr}"
    );
    assert!(
        check.elapsed < Duration::from_millis(DEADLINE_MS),
        "{:?}",
        check.elapsed
    );
    assert_nothing_left(project.path());
}

/// A loop's Stop with the project's daemon on (`RALPH_HOOKS_DEBUG` on).
fn stop_hook(project: &Project) -> (Value, String) {
    let payload = json!({
        "session_id": "daemon-session", "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "done",
    });
    let output = util::run_with_stdin(
        project.hook("ralph-stop-loop-controller"),
        payload.to_string().as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(stdout.trim()).unwrap()
    };
    (value, stderr)
}

#[test]
fn a_project_check_that_ran_out_of_time_goes_on_in_the_daemon_for_the_next_stop() {
    // 400 ms a file, six files, a 1 s loop budget: `loop start` gets two
    // or three answers and says the rest are not checked yet. The server
    // goes on in the daemon; the next Stop finds every file done — the same
    // server, no file sent twice — and blocks on the real errors.
    let project = Project::new(
        "slow-files",
        &["--delay-ms", "400", "--log-file", "sent.log"],
        DEADLINE_MS,
        json!({}),
    );
    reconfigure(
        &project,
        json!({"timeout_ms": DEADLINE_MS, "loop_budget_ms": 1_000, "ast_grep": false}),
        json!({}),
        json!({}),
    );
    for name in ["a", "b", "c", "d", "e", "f"] {
        std::fs::write(
            project.path().join(format!("{name}.fake")),
            format!("ERROR: broken {name}\n"),
        )
        .unwrap();
    }
    let mut start = project.hook("ralph-hooks");
    start
        .args(["loop", "start", "fix everything"])
        .env("CLAUDE_CODE_SESSION_ID", "daemon-session");
    let output = start.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("The check ran out of its 1 s budget"),
        "{text}"
    );
    // The daemon finishes the batch meanwhile (six files, 2.4 s in all).
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(project.path().join("sent.log"))
            .unwrap_or_default()
            .lines()
            .count()
            >= 6
    }));
    std::thread::sleep(Duration::from_millis(800));
    let started = Instant::now();
    let (blocked, stderr) = stop_hook(&project);
    let took = started.elapsed();
    assert_eq!(blocked["decision"], "block", "{blocked}\n{stderr}");
    let prompt = blocked["reason"].as_str().unwrap();
    for name in ["a", "b", "c", "d", "e", "f"] {
        assert!(prompt.contains(&format!("broken {name}")), "{prompt}");
    }
    assert!(!prompt.contains("not checked yet"), "{prompt}");
    assert!(took < Duration::from_millis(1_500), "{took:?}\n{stderr}");
    let sent = std::fs::read_to_string(project.path().join("sent.log")).unwrap();
    assert_eq!(sent.lines().count(), 6, "each file sent once:\n{sent}");
    assert_eq!(project.spawns().len(), 1, "one server start");
    project.finish();
}

#[test]
fn a_server_that_never_answers_initialize_holds_no_edit_past_its_deadline_and_is_told_once() {
    // It would answer initialize after a minute: past the 5 s any server
    // gets, whatever the file's own time (7 s here, so the two deadlines do
    // not race). The first edit is told after those 5 s that the server did
    // not start; the daemon leaves it alone for a while, so later edits are
    // neither held nor told again, and it is not restarted at every edit.
    let project = Project::new("slow-start", &["--delay-ms", "60000"], 7_000, json!({}));
    let first = project.check("a.fake", "ERROR: never seen\n");
    first.assert_ok();
    assert!(
        first.elapsed < Duration::from_millis(6_500),
        "took {:?}",
        first.elapsed
    );
    let text = first.context();
    assert!(text.contains("did not start"), "{text}");
    assert!(
        text.contains("no answer to initialize within 5 s"),
        "{text}"
    );
    assert!(
        text.contains("Do not take unchecked files as clean"),
        "{text}"
    );
    assert!(
        project.log().contains("could not start fake"),
        "{}",
        project.log()
    );
    for again in ["ERROR: still not seen\n", "ERROR: and again\n"] {
        let later = project.check("a.fake", again);
        later.assert_ok();
        assert!(
            later.elapsed < Duration::from_secs(2),
            "took {:?}",
            later.elapsed
        );
        assert!(
            String::from_utf8_lossy(&later.output.stdout)
                .trim()
                .is_empty(),
            "said once per session: {}",
            String::from_utf8_lossy(&later.output.stdout)
        );
    }
    assert_eq!(project.spawns().len(), 1, "not restarted at every edit");
    project.finish();
}

#[test]
fn a_warming_server_is_not_waited_for_again() {
    // Start-up takes 4 s, an edit's deadline is 1 s: the first edit waits
    // its second and is told "warming up"; the next one is told at once.
    let project = Project::new("slow-start", &["--delay-ms", "4000"], 1_000, json!({}));
    let first = project.check("a.fake", "ERROR: later\n");
    assert!(
        first.context().contains("warming up"),
        "{}",
        first.context()
    );
    assert!(
        first.elapsed >= Duration::from_millis(900),
        "{:?}",
        first.elapsed
    );
    let second = project.check("a.fake", "ERROR: later\n");
    assert!(
        second.context().contains("warming up"),
        "{}",
        second.context()
    );
    assert!(
        second.elapsed < Duration::from_millis(600),
        "not waited for again: {:?}",
        second.elapsed
    );
    std::thread::sleep(Duration::from_millis(3_500));
    let warm = project.check("a.fake", "ERROR: answered\n");
    assert!(
        warm.context()
            .contains("a.fake:1:1 error [fake E1] answered"),
        "{}",
        warm.context()
    );
    assert_eq!(project.spawns().len(), 1);
    project.finish();
}

/// A project whose `.py` files go to the fake server in `mode` (ruff off,
/// so only the fake and the built-in ast-grep rules speak).
fn python_fake_project(mode: &str, extra_args: &[&str], diagnostics: Value) -> Project {
    let dir = TempDir::new("daemon-py");
    let servers = json!({
        "fake": fake_server(dir.path(), mode, extra_args, ".py"),
        "ruff": {"disabled": true},
    });
    let project = Project::with_servers(dir, &servers, DEADLINE_MS, json!({}));
    reconfigure(&project, diagnostics, json!({}), json!({}));
    project
}

/// A Python file the built-in `no-eval` rule finds something in.
const EVAL_FILE: &str = "x = 1\ny = eval(\"1+1\")\n";

#[test]
fn a_server_that_never_publishes_times_out_and_the_rules_still_report() {
    // Issue 30 item 5, seed 004 AC-LSP-002: a server that answered
    // `initialize` and then says nothing about the file is reported as
    // timed out for it within the edit's 5 s — at every edit, never as
    // "warming up" — and the ast-grep findings for the file still come.
    let project = python_fake_project(
        "never-publishes",
        &[],
        json!({"timeout_ms": 5_000, "warmup_wait_ms": 0}),
    );
    for round in 1..=2 {
        let check = project.check("a.py", EVAL_FILE);
        check.assert_ok();
        let text = check.context();
        assert!(text.contains("timed out"), "round {round}: {text}");
        assert!(
            text.contains("fake is running but did not answer for this file in time"),
            "round {round}: {text}"
        );
        assert!(!text.contains("warming up"), "round {round}: {text}");
        // It never finished a first check: loading the project or stuck,
        // not "busy" (engine attack E14: a cold pyright was blamed).
        assert!(
            text.contains("it has not finished a first check since it started"),
            "round {round}: {text}"
        );
        assert!(!text.contains("busy or stuck"), "round {round}: {text}");
        assert!(
            text.contains("do not take this as clean"),
            "round {round}: {text}"
        );
        assert!(
            text.contains("a.py:2:5 warning [ast-grep no-eval]"),
            "round {round}: {text}"
        );
        assert!(!text.contains(": clean"), "round {round}: {text}");
        assert!(
            check.elapsed <= Duration::from_millis(5_000) + SLACK,
            "round {round} took {:?}",
            check.elapsed
        );
    }
    project.finish();
}

#[test]
fn a_project_check_calls_a_running_silent_server_loading_or_stuck_not_starting() {
    // Engine attack E-10: a server that answered `initialize` long ago and
    // never answers for a file was called "still starting and loading the
    // project" by `check` (and the loop's Stop) for ever.
    let project = python_fake_project(
        "never-publishes",
        &[],
        json!({"timeout_ms": 2_000, "warmup_wait_ms": 0}),
    );
    project.check("a.py", EVAL_FILE).assert_ok();
    let mut command = util::command("ralph-hooks", project.path());
    command.env_remove("RALPH_HOOKS_DAEMON").args([
        "check",
        "a.py",
        "--budget",
        "3",
        "--no-ast-grep",
    ]);
    let output = command.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("fake is running but has not finished a first look at the project"),
        "{text}"
    );
    assert!(!text.contains("still starting"), "{text}");
    project.finish();
}

#[test]
fn a_warming_server_does_not_hide_the_rules_findings() {
    // Start-up (4 s) is longer than the edit's time (1 s): the edit is told
    // "warming up" — and still gets the built-in rules' findings.
    let project = python_fake_project(
        "slow-start",
        &["--delay-ms", "4000"],
        json!({"timeout_ms": 1_000, "warmup_wait_ms": 0}),
    );
    let check = project.check("a.py", EVAL_FILE);
    check.assert_ok();
    let text = check.context();
    assert!(text.contains("warming up"), "{text}");
    assert!(text.contains("do not take this as clean"), "{text}");
    assert!(
        text.contains("a.py:2:5 warning [ast-grep no-eval]"),
        "{text}"
    );
    assert!(
        text.contains("- note (no-eval)"),
        "the rule's note comes with it: {text}"
    );
    project.finish();
}

#[test]
fn a_bash_command_on_a_server_that_never_publishes_is_timed_out_and_the_rules_still_report() {
    // The report for files a Bash command changed says what the post-edit
    // report says: a running server silent about the file is timed out
    // (not "warming up", not a bare "inconclusive"), and the built-in
    // rules' findings for the file still come.
    let project = python_fake_project(
        "never-publishes",
        &[],
        json!({"timeout_ms": 5_000, "warmup_wait_ms": 0}),
    );
    for round in 1..=2 {
        let source = format!("{EVAL_FILE}z = {round}\n");
        let check = project.bash("a.py", &source);
        check.assert_ok();
        let text = check.context();
        assert!(
            text.starts_with("This Bash command changed 1 file"),
            "round {round}: {text}"
        );
        assert!(
            text.contains("fake is running but did not answer for this file in time"),
            "round {round}: {text}"
        );
        assert!(!text.contains("warming up"), "round {round}: {text}");
        assert!(
            text.contains("a.py:2:5 warning [ast-grep no-eval]"),
            "round {round}: {text}"
        );
        assert!(!text.contains(": clean"), "round {round}: {text}");
        assert!(
            check.elapsed <= Duration::from_millis(5_000) + SLACK,
            "round {round} took {:?}",
            check.elapsed
        );
    }
    project.finish();
}

#[test]
fn a_bash_command_while_the_server_warms_up_still_gets_the_rules_findings() {
    // Start-up (4 s) is longer than the file's time (1 s): the command's
    // report says "warming up" — the server is starting — and carries the
    // built-in rules' findings and notes.
    let project = python_fake_project(
        "slow-start",
        &["--delay-ms", "4000"],
        json!({"timeout_ms": 1_000, "warmup_wait_ms": 0}),
    );
    let check = project.bash("a.py", EVAL_FILE);
    check.assert_ok();
    let text = check.context();
    assert!(text.contains("warming up"), "{text}");
    assert!(text.contains("do not take this as clean"), "{text}");
    assert!(
        text.contains("a.py:2:5 warning [ast-grep no-eval]"),
        "{text}"
    );
    assert!(text.contains("- note (no-eval)"), "{text}");
    project.finish();
}

// See: attack finding G4: a daemon started in plain mode kept starting
// language servers without walls after `ralph-hooks install --sandbox`, so
// a server the agent planted ran outside every sandbox.
#[test]
fn a_daemon_of_the_other_mode_stops_when_sandbox_mode_is_switched_on() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    let check = project.check("a.fake", "ERROR: once\n");
    assert!(check.served_by_daemon(), "{}", check.stderr());
    let daemon = project.daemon_pid();
    let server = project.spawns()[0];
    // What `install --sandbox` leaves in the state root.
    std::fs::write(project.state().join("sandbox.json"), "{}\n").unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !alive(daemon)),
        "the daemon of plain mode still runs in sandbox mode"
    );
    assert!(!alive(server), "its server still runs without walls");
    assert!(
        project.log().contains("sandbox mode was switched on"),
        "{}",
        project.log()
    );
}

/// A server the daemon starts has no signal blocked, so `kill PID` stops
/// it, and so do its own children (re-attack RE-17: SIGHUP, SIGINT and
/// SIGTERM were blocked in every server).
#[test]
fn a_server_the_daemon_starts_can_be_stopped_with_a_signal() {
    let project = Project::new("normal", &[], DEADLINE_MS, json!({}));
    project.check("a.fake", "ERROR: one\n");
    let spawns = project.spawns();
    let status = std::fs::read_to_string(format!("/proc/{}/status", spawns[0])).unwrap();
    let blocked = status
        .lines()
        .find_map(|line| line.strip_prefix("SigBlk:"))
        .unwrap()
        .trim();
    assert!(blocked.chars().all(|c| c == '0'), "SigBlk {blocked}");
    project.finish();
}
