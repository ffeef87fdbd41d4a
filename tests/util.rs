//! Test support: temp dirs, running the real binaries with a clean
//! environment, and JSON/text comparison with `[..]` wildcards.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The fixed clock every test run sees unless it sets its own.
pub const TEST_NOW: &str = "2026-11-21T12:00:00Z";

/// A fresh directory, removed on drop (kept when `KEEP_TEMP=1`, for debugging).
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let path = std::env::temp_dir().join(format!(
            "ralph-test-{label}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).unwrap();
        // Canonical, so paths in outputs match what the binaries compute.
        TempDir {
            path: path.canonicalize().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("KEEP_TEMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The path of one of our binaries, built by cargo for the tests, or in
/// `RALPH_HOOKS_TEST_BIN_DIR`: another build of them (CI runs the golden
/// cases against the aarch64 build, which the kernel hands to qemu).
pub fn bin(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("RALPH_HOOKS_TEST_BIN_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join(name);
    }
    let path = match name {
        "ralph-hooks" => env!("CARGO_BIN_EXE_ralph-hooks"),
        "ralph-stop-loop-controller" => env!("CARGO_BIN_EXE_ralph-stop-loop-controller"),
        "ralph-session-start" => env!("CARGO_BIN_EXE_ralph-session-start"),
        "ralph-pre-tool-stop-guard" => env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard"),
        "ralph-post-tool-lsp-diagnostic" => env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic"),
        "ralph-user-prompt-submit" => env!("CARGO_BIN_EXE_ralph-user-prompt-submit"),
        other => panic!("unknown binary {other}"),
    };
    PathBuf::from(path)
}

/// A command for one of our binaries with a clean environment: no
/// `CLAUDE_*` or `RALPH_HOOKS_*` from the developer's shell, the project set,
/// and the clock pinned. The warm-server daemon is off (`RALPH_HOOKS_DAEMON=0`):
/// these tests check in-process and must leave no daemon behind; the daemon
/// tests turn it back on. The guard's snapshots go under the temp folder
/// (`XDG_STATE_HOME`), not the developer's `~/.local/state`.
pub fn command(name: &str, project: &Path) -> Command {
    let mut command = Command::new(bin(name));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CLAUDE")
            || (key.starts_with("RALPH_HOOKS") && key != "RALPH_HOOKS_REQUIRE_SERVERS")
        {
            command.env_remove(key.as_ref());
        }
    }
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .env("RALPH_HOOKS_NOW", TEST_NOW)
        .env("RALPH_HOOKS_DAEMON", "0")
        .env("XDG_STATE_HOME", test_state_home())
        .current_dir(project);
    command
}

/// Where the binaries under test keep the guard's snapshots: one folder for
/// every test run (each project gets its own folder inside), private as the
/// guard wants it.
pub fn test_state_home() -> PathBuf {
    let dir = std::env::temp_dir().join("ralph-test-xdg-state");
    if !dir.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    dir
}

/// Runs `command` with `stdin` written from a separate thread (a full pipe
/// must not deadlock us against the child).
pub fn run_with_stdin(mut command: Command, stdin: &[u8]) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn binary");
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    let output = child.wait_with_output().expect("wait for binary");
    writer.join().unwrap();
    output
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file below `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Replaces `{{NAME}}` placeholders.
pub fn substitute(text: &str, vars: &[(&str, String)]) -> String {
    let mut text = text.to_string();
    for (name, value) in vars {
        text = text.replace(&format!("{{{{{name}}}}}"), value);
    }
    text
}

/// Where `actual` differs from `expected`; `"[..]"` in a string of
/// `expected` matches any text (a whole-string `"[..]"` matches any value),
/// and an object key `"[..]": "[..]"` allows extra keys.
pub fn json_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::String(pattern), _) if pattern == "[..]" => None,
        (Value::String(pattern), Value::String(text)) if pattern.contains("[..]") => {
            (!wildcard_match(pattern, text))
                .then(|| format!("{path}: {text:?} does not match {pattern:?}"))
        }
        (Value::Object(want), Value::Object(got)) => {
            let open = want.get("[..]").is_some();
            for (key, value) in want {
                if key == "[..]" {
                    continue;
                }
                match got.get(key) {
                    None => return Some(format!("{path}.{key}: missing")),
                    Some(actual) => {
                        if let Some(m) = json_mismatch(value, actual, &format!("{path}.{key}")) {
                            return Some(m);
                        }
                    }
                }
            }
            if !open && let Some(extra) = got.keys().find(|k| !want.contains_key(*k)) {
                return Some(format!(
                    "{path}.{extra}: unexpected key (value {})",
                    got[extra]
                ));
            }
            None
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                return Some(format!(
                    "{path}: expected {} items, got {}: {actual}",
                    want.len(),
                    got.len()
                ));
            }
            want.iter()
                .zip(got)
                .enumerate()
                .find_map(|(i, (w, g))| json_mismatch(w, g, &format!("{path}[{i}]")))
        }
        _ => (expected != actual).then(|| format!("{path}: expected {expected}, got {actual}")),
    }
}

/// Text matching where `[..]` stands for any run of characters.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let Some(rest) = text.strip_prefix(parts[0]) else {
        return false;
    };
    let mut rest = rest;
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(parts[parts.len() - 1])
}

/// Says that `what` did not run here and why; listed again after the run
/// ([`crate::skips`]), and a failure under `.ci/run`.
pub fn skip(what: &str, why: &str) {
    crate::skips::record(what, why);
}

/// Whether `RALPH_HOOKS_REQUIRE_SERVERS=1` turns a missing tool into a failure.
pub fn servers_required() -> bool {
    std::env::var("RALPH_HOOKS_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// For tests that need an external tool: `Some(path)` when found; otherwise
/// prints why it skips, or panics when tools are required (CI).
pub fn require_tool(name: &str, why: &str) -> Option<PathBuf> {
    match which::which(name) {
        Ok(path) => Some(path),
        Err(_) if servers_required() => {
            panic!("{name} is required (RALPH_HOOKS_REQUIRE_SERVERS=1) for {why}, but not on PATH")
        }
        Err(_) => {
            skip(why, &format!("{name} is not on PATH"));
            None
        }
    }
}

/// An ordinary (non-root) user to run the binaries as: root ignores file
/// modes, so a `chmod` of the hooks' files shows only as another user.
/// As root, the binaries run through `setpriv` as `nobody` (65534) with no
/// groups; as anyone else, they run as they are.
pub struct Unprivileged {
    uid: u32,
    gid: u32,
    /// `setpriv` when we are root.
    setpriv: Option<PathBuf>,
    /// A HOME and an XDG_STATE_HOME the user owns.
    pub home: PathBuf,
    pub state_home: PathBuf,
}

impl Unprivileged {
    /// The user, with a home and state folder under `dir` (which, with
    /// everything in it, is given to the user). `None` when it cannot be
    /// done here: it prints why, or panics under
    /// `RALPH_HOOKS_REQUIRE_SERVERS=1` (CI, which runs as root).
    pub fn new(dir: &Path) -> Option<Unprivileged> {
        let euid = unsafe { libc::geteuid() };
        let (uid, gid, setpriv) = if euid == 0 {
            let setpriv = require_tool("setpriv", "a test as an ordinary user")?;
            (65534, 65534, Some(setpriv))
        } else {
            (euid, unsafe { libc::getegid() }, None)
        };
        let home = dir.join("home-of-ordinary-user");
        let state_home = home.join(".local/state");
        std::fs::create_dir_all(&state_home).unwrap();
        let user = Unprivileged {
            uid,
            gid,
            setpriv,
            home,
            state_home,
        };
        user.give(dir);
        // Every folder above `dir` must be searchable by the user.
        let mut ls = Command::new("ls");
        ls.arg(dir);
        let probe = user.run(ls);
        if !probe.status.success() {
            let why = format!(
                "uid {uid} cannot reach {}: {}",
                dir.display(),
                String::from_utf8_lossy(&probe.stderr).trim()
            );
            if servers_required() {
                panic!(
                    "a test as an ordinary user is required (RALPH_HOOKS_REQUIRE_SERVERS=1): {why}"
                );
            }
            skip("a test as an ordinary user", &why);
            return None;
        }
        Some(user)
    }

    /// Gives `path` and everything under it to the user.
    pub fn give(&self, path: &Path) {
        if self.setpriv.is_none() {
            return;
        }
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", self.uid, self.gid))
            .arg(path)
            .status()
            .expect("chown");
        assert!(status.success(), "chown -R {}", path.display());
    }

    /// `command` run as the user (its program, arguments, environment and
    /// folder kept), with the user's HOME and XDG_STATE_HOME.
    pub fn wrap(&self, command: &Command) -> Command {
        let mut wrapped = match &self.setpriv {
            Some(setpriv) => {
                let mut wrapped = Command::new(setpriv);
                wrapped
                    .arg(format!("--reuid={}", self.uid))
                    .arg(format!("--regid={}", self.gid))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(command.get_program());
                wrapped
            }
            None => Command::new(command.get_program()),
        };
        wrapped.args(command.get_args());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        if let Some(dir) = command.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state_home);
        wrapped
    }

    /// One of our binaries as the user, as [`command`] sets it up.
    pub fn command(&self, name: &str, project: &Path) -> Command {
        self.wrap(&command(name, project))
    }

    pub fn run(&self, command: Command) -> Output {
        self.wrap(&command)
            .output()
            .expect("run as an ordinary user")
    }
}

#[test]
fn wildcards_match_as_documented() {
    assert!(wildcard_match("a[..]c", "abbbc"));
    assert!(wildcard_match("[..]", "anything"));
    assert!(!wildcard_match("a[..]c", "abbbd"));
    let expected = serde_json::json!({"a": "[..]", "b": "x[..]"});
    assert!(json_mismatch(&expected, &serde_json::json!({"a": 1, "b": "xyz"}), "$").is_none());
    assert!(
        json_mismatch(
            &expected,
            &serde_json::json!({"a": 1, "b": "xyz", "c": 2}),
            "$"
        )
        .is_some()
    );
}

/// A `.lsp.json` text sending `.fake` files to the fake server started
/// with `args` (`--mode normal`, …).
pub fn fake_lsp_json(args: &[&str]) -> String {
    serde_json::json!({"fake": {
        "command": fake_lsp_server().display().to_string(),
        "args": args,
        "extensionToLanguage": {".fake": "fake"},
    }})
    .to_string()
}

/// Writes [`fake_lsp_json`] as the project's `.lsp.json`.
pub fn write_fake_lsp_json(project: &Path, args: &[&str]) {
    std::fs::create_dir_all(project).unwrap();
    std::fs::write(project.join(".lsp.json"), fake_lsp_json(args)).unwrap();
}

/// Writes the project's `.claude/ralph-hooks.json`.
pub fn write_hook_config(project: &Path, config: Value) {
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/ralph-hooks.json"), config.to_string()).unwrap();
}

/// The fake language server (`examples/fake_lsp_server.rs`). `cargo test`
/// builds examples; a filtered run (`cargo test --test integration`) may
/// not, so it is built here when missing or older than its source.
pub fn fake_lsp_server() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            // <target>/<profile>/deps/integration-<hash>
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("target profile dir");
            let path = profile_dir.join("examples").join("fake_lsp_server");
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_lsp_server.rs");
            let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
            let stale = match (modified(&path), modified(&source)) {
                (Some(built), Some(written)) => built < written,
                _ => true,
            };
            if stale {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
                let mut build = Command::new(cargo);
                build
                    .args(["build", "--example", "fake_lsp_server"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"));
                if profile_dir.file_name().is_some_and(|n| n == "release") {
                    build.arg("--release");
                }
                let status = build.status().expect("run cargo build --example");
                assert!(status.success(), "cannot build the fake language server");
            }
            assert!(
                path.is_file(),
                "no fake language server at {}",
                path.display()
            );
            path
        })
        .clone()
}

/// Live (not zombie) processes whose process group is `pgid`, from /proc.
pub fn live_processes_in_group(pgid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …"; comm may hold spaces and parens.
        let Some(after_comm) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        let (Some(state), Some(group)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if *state != "Z" && group.parse::<u32>() == Ok(pgid) {
            found.push(stat.trim().to_string());
        }
    }
    found
}

/// Asserts that the process recorded in `pid_file` and its whole process
/// group are gone; polls briefly, since SIGKILL delivery is asynchronous.
pub fn assert_group_gone(pid_file: &Path) {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .unwrap_or_else(|e| panic!("the fake server never wrote {}: {e}", pid_file.display()))
        .trim()
        .parse()
        .expect("pid file holds a pid");
    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let left = live_processes_in_group(pid);
        // The leader is our child: it must be reaped, not even a zombie.
        let leader_present = Path::new(&format!("/proc/{pid}")).exists();
        if left.is_empty() && !leader_present {
            return;
        }
        if std::time::Instant::now() > until {
            panic!(
                "processes of the fake server's group {pid} are still there (leader present: {leader_present}): {left:#?}"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `ralph-hooks loop start ARGS` in `project` for `session`; it must start.
pub fn start_loop(project: &Path, session: &str, args: &[&str]) {
    let output = command("ralph-hooks", project)
        .env("CLAUDE_CODE_SESSION_ID", session)
        .args(["loop", "start"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The Stop hook after "done" in `session`: its JSON answer (`Null` when
/// it said nothing).
pub fn stop_hook(project: &Path, session: &str) -> Value {
    let mut stop = command("ralph-stop-loop-controller", project);
    stop.env("CLAUDE_CODE_SESSION_ID", session);
    let payload = serde_json::json!({"session_id": session, "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "done"});
    let output = run_with_stdin(stop, payload.to_string().as_bytes());
    serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
}
