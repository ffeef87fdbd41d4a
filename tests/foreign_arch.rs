//! The aarch64 Linux build, on an x86_64 machine: `.ci/dist --dev --target
//! x86_64-unknown-linux-musl --target aarch64-unknown-linux-musl` (into
//! `target/dist/`, or `$RALPH_HOOKS_DIST_DIR`) builds its wheel, npm
//! packages and plugin; each is installed offline into a fresh prefix as an aarch64
//! machine would (pip `--platform`, npm `--cpu arm64`), its executables
//! must be static aarch64 ones (the npm ones with the sha256 the main
//! package records), and each route's binaries run a loop under the user
//! mode emulator (`qemu-aarch64-static`): held by the Stop hook, a `git
//! push` denied by the guard, released by the promise. CI also runs the
//! golden cases against these binaries (`.ci/run`).
//!
//! Without the build or the emulator the test says why and passes, unless
//! `RALPH_HOOKS_REQUIRE_SERVERS=1` (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::dist::run;
use crate::util::{self, TempDir};

const SESSION: &str = "5e55d157-0000-4000-8000-0000000aa64a";
const BINARIES: &[&str] = &[
    "ralph-hooks",
    "ralph-stop-loop-controller",
    "ralph-session-start",
    "ralph-pre-tool-stop-guard",
    "ralph-post-tool-lsp-diagnostic",
    "ralph-user-prompt-submit",
];
/// ELF `e_machine` of aarch64.
const EM_AARCH64: u16 = 183;

fn dist_dir() -> PathBuf {
    crate::dist::dist_dir()
}

/// Says why the test cannot run, and fails when it must.
fn skip(why: &str) {
    assert!(
        !util::servers_required(),
        "the aarch64 build is required (RALPH_HOOKS_REQUIRE_SERVERS=1), but {why}"
    );
    util::skip("the aarch64 routes", why);
}

/// The build's manifest and the emulator, or `None` after saying why.
fn prerequisites() -> Option<(Value, PathBuf)> {
    if std::env::consts::ARCH == "aarch64" {
        // The usual suites test this machine's own build.
        eprintln!("this machine is aarch64: its own build is what the other tests run");
        return None;
    }
    let path = dist_dir().join("MANIFEST.json");
    let manifest: Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).expect("MANIFEST.json is JSON"),
        Err(error) => {
            skip(&format!(
                "no {} ({error}): run `.ci/dist --dev --target x86_64-unknown-linux-musl --target aarch64-unknown-linux-musl`",
                path.display()
            ));
            return None;
        }
    };
    if manifest["platforms"]["linux-arm64"].is_null() {
        skip(&format!(
            "{} has no aarch64 build: run `.ci/dist --dev --target x86_64-unknown-linux-musl --target aarch64-unknown-linux-musl`",
            path.display()
        ));
        return None;
    }
    let Some(qemu) = ["qemu-aarch64-static", "qemu-aarch64"]
        .iter()
        .find_map(|name| which::which(name).ok())
    else {
        skip("no qemu-aarch64-static on PATH (Debian: `apt-get install qemu-user-static`)");
        return None;
    };
    Some((manifest, qemu))
}

/// The ELF machine of `path`, `None` for anything else.
fn elf_machine(path: &Path) -> Option<u16> {
    let bytes = std::fs::read(path).ok()?;
    (bytes.len() > 20 && bytes[..4] == *b"\x7fELF")
        .then(|| u16::from_le_bytes([bytes[18], bytes[19]]))
}

/// Static: no program interpreter (`PT_INTERP`) in the program headers.
fn is_static(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let word = |at: usize, len: usize| {
        bytes[at..at + len]
            .iter()
            .rev()
            .fold(0u64, |value, byte| value << 8 | u64::from(*byte))
    };
    // 64-bit little-endian ELF: e_phoff at 32, e_phentsize at 54, e_phnum at 56.
    let (offset, size, count) = (
        word(32, 8) as usize,
        word(54, 2) as usize,
        word(56, 2) as usize,
    );
    (0..count).all(|i| word(offset + i * size, 4) != 3)
}

fn assert_aarch64_executables(route: &str, dir: &Path) {
    for name in BINARIES {
        let path = dir.join(name);
        assert_eq!(
            elf_machine(&path),
            Some(EM_AARCH64),
            "{route}: {} is not an aarch64 executable",
            path.display()
        );
        assert!(
            is_static(&path),
            "{route}: {} is not static",
            path.display()
        );
    }
}

/// `binary` of `dir` under the emulator, with nothing from the developer's
/// shell that would change what it does.
fn emulated(qemu: &Path, dir: &Path, binary: &str, project: &Path) -> Command {
    let mut command = Command::new(qemu);
    command.arg(dir.join(binary));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CLAUDE") || key.starts_with("RALPH_HOOKS") {
            command.env_remove(key.as_ref());
        }
    }
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .env("CLAUDE_CODE_SESSION_ID", SESSION)
        .env("RALPH_HOOKS_DAEMON", "0")
        .env("XDG_STATE_HOME", util::test_state_home())
        .current_dir(project);
    command
}

/// One hook of `dir` under the emulator: its answer on stdout.
fn hook(qemu: &Path, dir: &Path, binary: &str, project: &Path, input: &Value) -> String {
    let output = util::run_with_stdin(
        emulated(qemu, dir, binary, project),
        input.to_string().as_bytes(),
    );
    assert!(
        output.status.success(),
        "{binary} exited {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A loop run by the binaries in `dir`: started by the CLI, a stop without
/// the promise held, a `git push` denied while it runs, the promise ends it.
fn assert_a_loop_runs(route: &str, qemu: &Path, dir: &Path) {
    let temp = TempDir::new(&format!("aarch64-{route}"));
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let started = run(
        emulated(qemu, dir, "ralph-hooks", &project).args([
            "loop",
            "start",
            "ship it",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ]),
        &format!("{route}: ralph-hooks loop start"),
    );
    assert!(
        String::from_utf8_lossy(&started.stdout).contains("ship it"),
        "{route}: {}",
        String::from_utf8_lossy(&started.stdout)
    );
    let stop = |message: &str| {
        let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                           "stop_hook_active": false, "last_assistant_message": message});
        hook(qemu, dir, "ralph-stop-loop-controller", &project, &input)
    };
    let held: Value = serde_json::from_str(&stop("still working")).unwrap();
    assert_eq!(held["decision"], "block", "{route}: {held}");

    let push = json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
                      "tool_name": "Bash", "tool_use_id": "toolu_push",
                      "tool_input": {"command": "git push origin main"}});
    let denied: Value = serde_json::from_str(&hook(
        qemu,
        dir,
        "ralph-pre-tool-stop-guard",
        &project,
        &push,
    ))
    .unwrap();
    assert_eq!(
        denied["hookSpecificOutput"]["permissionDecision"], "deny",
        "{route}: {denied}"
    );

    let released = stop("all done <promise>DONE</promise>");
    assert!(!released.contains("\"block\""), "{route}: {released}");
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["status"], "COMPLETED", "{route}: {state}");
}

#[test]
fn aarch64_routes_install_offline_and_run_a_loop_under_the_emulator() {
    let Some((manifest, qemu)) = prerequisites() else {
        return;
    };
    let built = &manifest["platforms"]["linux-arm64"];
    assert_eq!(
        built["target"], "aarch64-unknown-linux-musl",
        "{manifest:#}"
    );
    let temp = TempDir::new("aarch64-routes");

    // The wheel, as pip installs it on an aarch64 machine.
    let wheel = dist_dir().join(built["wheel"].as_str().unwrap());
    let target = temp.path().join("wheel");
    run(
        Command::new("python3")
            .args(["-m", "pip", "install", "--no-index", "--no-deps", "--quiet"])
            .args(["--platform", "manylinux2014_aarch64", "--only-binary=:all:"])
            .arg("--target")
            .arg(&target)
            .arg(&wheel)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        "pip install --platform manylinux2014_aarch64",
    );
    let wheel_bin = target.join("bin");
    assert_aarch64_executables("wheel", &wheel_bin);
    assert_a_loop_runs("wheel", &qemu, &wheel_bin);

    // The npm packages, as npm installs them for an arm64 machine.
    if let Some(npm) = util::require_tool("npm", "the aarch64 npm route") {
        let tarballs = crate::dist::npm_tarballs(&manifest, "linux-arm64");
        assert_eq!(tarballs.len(), 2, "{manifest:#}");
        let prefix = temp.path().join("npm");
        run(
            Command::new(&npm)
                .args([
                    "install",
                    "--global",
                    "--offline",
                    "--no-audit",
                    "--no-fund",
                ])
                // The platform package, named explicitly, is refused on
                // this CPU whatever `--cpu` says: forced, as on arm64.
                .args(["--cpu", "arm64", "--os", "linux", "--force", "--prefix"])
                .arg(&prefix)
                .args(&tarballs)
                .env("npm_config_registry", "http://127.0.0.1:9/")
                .env("npm_config_cache", temp.path().join("npm-cache"))
                .env("npm_config_update_notifier", "false"),
            "npm install -g --cpu arm64 --force",
        );
        let modules = prefix.join("lib/node_modules");
        let platform = [
            "ralph-hooks-linux-arm64",
            "ralph-hooks/node_modules/ralph-hooks-linux-arm64",
        ]
        .iter()
        .map(|relative| modules.join(relative))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| {
            panic!(
                "npm installed no ralph-hooks-linux-arm64 in {}",
                modules.display()
            )
        });
        let npm_bin = platform.join("bin");
        assert_aarch64_executables("npm", &npm_bin);
        let main: Value = serde_json::from_str(
            &std::fs::read_to_string(modules.join("ralph-hooks/package.json")).unwrap(),
        )
        .unwrap();
        for name in BINARIES {
            let bytes = std::fs::read(npm_bin.join(name)).unwrap();
            assert_eq!(
                main["ralphHooksSha256"]["ralph-hooks-linux-arm64"][name],
                sha256_hex(&bytes),
                "npm: {name} is not the binary the main package records"
            );
        }
        assert_a_loop_runs("npm", &qemu, &npm_bin);
    }

    // The plugin folder: its hooks run the aarch64 binaries it carries.
    let market = dist_dir().join(built["plugin"].as_str().unwrap());
    let plugin = market.join("ralph-hooks");
    let plugin_bin = plugin.join("bin");
    assert_aarch64_executables("plugin", &plugin_bin);
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(plugin.join("hooks/hooks.json")).unwrap())
            .unwrap();
    for groups in hooks["hooks"].as_object().unwrap().values() {
        for group in groups.as_array().unwrap() {
            for handler in group["hooks"].as_array().unwrap() {
                let command = handler["command"].as_str().unwrap();
                let program = command
                    .strip_prefix("\"${CLAUDE_PLUGIN_ROOT}/bin/")
                    .and_then(|rest| rest.split('"').next())
                    .unwrap_or_else(|| panic!("plugin hook not in its bin/: {command}"));
                assert_eq!(elf_machine(&plugin_bin.join(program)), Some(EM_AARCH64));
            }
        }
    }
    assert_a_loop_runs("plugin", &qemu, &plugin_bin);
}

/// SHA-256 in hex, as `.ci/dist` records it.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
