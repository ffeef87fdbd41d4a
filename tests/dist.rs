//! The install routes without Rust, from the artifacts `.ci/dist` built into
//! `target/dist/` (or `$RALPH_HOOKS_DIST_DIR`): each is installed offline into
//! a fresh prefix (the wheel with pip into a venv, with `uv tool` and with
//! pipx; the npm tarballs with `npm install -g --prefix --offline`; the
//! plugin folder as it is), then every hook command the route puts on PATH
//! must be the native executable itself (no Python or node shim), and a loop
//! started with the route's CLI must be held, then released, by the route's
//! Stop hook.
//!
//! Without `target/dist/MANIFEST.json`, or without python3 or npm, the test
//! says why and passes, unless `RALPH_HOOKS_REQUIRE_SERVERS=1` (CI, whose
//! `.ci/run` runs `.ci/dist --dev` for both static targets first). uv and pipx come from
//! `.ci/install-dist-tools.sh` (`~/.cache/ralph-hooks/dist-tools/bin`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "5e55d157-0000-4000-8000-00000000d157";
const BINARIES: &[&str] = &[
    "ralph-hooks",
    "ralph-stop-loop-controller",
    "ralph-session-start",
    "ralph-pre-tool-stop-guard",
    "ralph-post-tool-lsp-diagnostic",
    "ralph-user-prompt-submit",
];

pub(crate) fn dist_dir() -> PathBuf {
    std::env::var_os("RALPH_HOOKS_DIST_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist"))
}

/// The manifest `.ci/dist` wrote, or `None` after saying why (a failure
/// when the routes are required).
fn manifest() -> Option<Value> {
    let path = dist_dir().join("MANIFEST.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).expect("MANIFEST.json is JSON")),
        Err(error) => {
            let why = format!(
                "no {} ({error}): run `.ci/dist --quick` (or `.ci/dist --dev`) first",
                path.display()
            );
            assert!(
                !util::servers_required(),
                "the install routes are required (RALPH_HOOKS_REQUIRE_SERVERS=1), but {why}"
            );
            eprintln!("skipping the install-route tests: {why}");
            None
        }
    }
}

/// The platform of this machine among those built, e.g. `linux-x64`.
fn host_platform(manifest: &Value) -> Option<String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        _ => return None,
    };
    let platforms = manifest["platforms"].as_object()?;
    platforms
        .iter()
        .find(|(_, built)| {
            built["target"]
                .as_str()
                .is_some_and(|target| target.starts_with(arch))
        })
        .map(|(key, _)| key.clone())
}

fn dist_tool(name: &str) -> Option<PathBuf> {
    let tools = std::env::var_os("RALPH_HOOKS_DIST_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/ralph-hooks/dist-tools/bin"))
        })?;
    let candidate = tools.join(name);
    if candidate.is_file() {
        return Some(candidate);
    }
    util::require_tool(name, &format!("the {name} install route"))
}

pub(crate) fn run(command: &mut Command, what: &str) -> Output {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Whether `path` (symlinks followed) is an ELF executable, not a script.
fn is_native(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// Every command a route puts in `bin_dir` is the native executable.
fn assert_native_commands(route: &str, bin_dir: &Path) {
    for name in BINARIES {
        let path = bin_dir.join(name);
        assert!(path.exists(), "{route}: no {}", path.display());
        let real = path.canonicalize().unwrap();
        assert!(
            is_native(&real),
            "{route}: {} ({}) is not the native executable but a shim: {:?}",
            path.display(),
            real.display(),
            std::fs::read(&real)
                .map(|bytes| String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned())
        );
    }
}

/// A command for an installed binary with nothing from the developer's
/// shell that would change what it does.
fn clean(program: &Path, project: &Path) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CLAUDE") || key.starts_with("RALPH_HOOKS") {
            command.env_remove(key.as_ref());
        }
    }
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .env("RALPH_HOOKS_DAEMON", "0")
        .env("XDG_STATE_HOME", util::test_state_home())
        .current_dir(project);
    command
}

/// The route's CLI starts a loop; the route's Stop hook, run as `hook_command`
/// through `sh -c` with `environment` (as Claude Code runs a hook), blocks a
/// stop without the promise and lets the one with it end the loop.
fn assert_stop_hook_answers(
    route: &str,
    cli: &Path,
    hook_command: &str,
    environment: &[(&str, &Path)],
) {
    let temp = TempDir::new(&format!("dist-{route}"));
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let started = run(
        clean(cli, &project)
            .env("CLAUDE_CODE_SESSION_ID", SESSION)
            .args([
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
        let mut command = clean(Path::new("/bin/sh"), &project);
        command.args(["-c", hook_command]);
        for (key, value) in environment {
            command.env(key, value);
        }
        let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                           "stop_hook_active": false, "last_assistant_message": message});
        let output = util::run_with_stdin(command, input.to_string().as_bytes());
        assert!(
            output.status.success(),
            "{route}: the Stop hook exited {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let held = stop("still working");
    let held: Value = serde_json::from_str(&held).unwrap_or_else(|error| {
        panic!("{route}: the Stop hook's answer is not JSON ({error}): {held}")
    });
    assert_eq!(held["decision"], "block", "{route}: {held}");
    assert!(
        held["reason"].as_str().unwrap().contains("ship it"),
        "{route}: {held}"
    );
    let released = stop("all done <promise>DONE</promise>");
    assert!(
        !released.contains("\"block\""),
        "{route}: the promise did not end the loop: {released}"
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["status"], "COMPLETED", "{route}: {state}");
}

/// The main npm package and the one of `platform` (`linux-x64`): what npm
/// fetches on such a machine (it refuses another CPU's package named
/// explicitly).
pub(crate) fn npm_tarballs(manifest: &Value, platform: &str) -> Vec<PathBuf> {
    let version = manifest["version"].as_str().unwrap_or_default();
    manifest["npm"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|name| {
            name.ends_with(&format!("/ralph-hooks-{version}.tgz"))
                || name.ends_with(&format!("/ralph-hooks-{platform}-{version}.tgz"))
        })
        .map(|name| dist_dir().join(name))
        .collect()
}

fn wheel_path(manifest: &Value, platform: &str) -> PathBuf {
    dist_dir().join(manifest["platforms"][platform]["wheel"].as_str().unwrap())
}

#[test]
fn wheel_installs_offline_with_pip_uv_and_pipx() {
    let Some(manifest) = manifest() else { return };
    let Some(platform) = host_platform(&manifest) else {
        panic!(
            "no build for this machine's CPU in {}",
            dist_dir().display()
        );
    };
    let Some(python) = util::require_tool("python3", "the wheel route") else {
        return;
    };
    let wheel = wheel_path(&manifest, &platform);
    let temp = TempDir::new("dist-wheel");

    // pip into a fresh venv, with no index at all.
    let venv = temp.path().join("venv");
    run(
        Command::new(&python).args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    );
    run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--no-index", "--disable-pip-version-check"])
            .arg(&wheel),
        "pip install --no-index",
    );
    let bin = venv.join("bin");
    assert_native_commands("pip", &bin);
    assert_stop_hook_answers(
        "pip",
        &bin.join("ralph-hooks"),
        "ralph-stop-loop-controller",
        &[("PATH", &bin)],
    );

    // uv tool install, offline, from the wheel file.
    if let Some(uv) = dist_tool("uv") {
        let tool_dir = temp.path().join("uv-tools");
        let bin_dir = temp.path().join("uv-bin");
        run(
            Command::new(uv)
                .args(["tool", "install", "--offline", "--no-index", "--no-config"])
                .arg(&wheel)
                .env("UV_TOOL_DIR", &tool_dir)
                .env("UV_TOOL_BIN_DIR", &bin_dir)
                .env("UV_CACHE_DIR", temp.path().join("uv-cache"))
                .env("UV_PYTHON_DOWNLOADS", "never"),
            "uv tool install --offline",
        );
        assert_native_commands("uv tool", &bin_dir);
        assert_stop_hook_answers(
            "uv",
            &bin_dir.join("ralph-hooks"),
            "ralph-stop-loop-controller",
            &[("PATH", &bin_dir)],
        );
    }

    // pipx install, with pip told to use no index.
    if let Some(pipx) = dist_tool("pipx") {
        let bin_dir = temp.path().join("pipx-bin");
        run(
            Command::new(pipx)
                .args(["install", "--pip-args=--no-index"])
                .arg(&wheel)
                .env("PIPX_HOME", temp.path().join("pipx-home"))
                .env("PIPX_BIN_DIR", &bin_dir)
                .env("PIPX_MAN_DIR", temp.path().join("pipx-man"))
                .env("PIP_NO_INDEX", "1"),
            "pipx install",
        );
        assert_native_commands("pipx", &bin_dir);
        assert_stop_hook_answers(
            "pipx",
            &bin_dir.join("ralph-hooks"),
            "ralph-stop-loop-controller",
            &[("PATH", &bin_dir)],
        );
    }
}

#[test]
fn npm_packages_install_offline_and_link_the_native_binaries() {
    let Some(manifest) = manifest() else { return };
    let Some(npm) = util::require_tool("npm", "the npm route") else {
        return;
    };
    let Some(platform) = host_platform(&manifest) else {
        panic!(
            "no build for this machine's CPU in {}",
            dist_dir().display()
        );
    };
    let tarballs = npm_tarballs(&manifest, &platform);
    let temp = TempDir::new("dist-npm");
    let prefix = temp.path().join("prefix");
    run(
        Command::new(&npm)
            .args([
                "install",
                "--global",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(&prefix)
            .args(&tarballs)
            // No registry can answer: anything not in the tarballs fails at once.
            .env("npm_config_registry", "http://127.0.0.1:9/")
            .env("npm_config_cache", temp.path().join("npm-cache"))
            .env("npm_config_update_notifier", "false"),
        "npm install -g --offline",
    );
    let bin = prefix.join("bin");
    assert_native_commands("npm", &bin);
    assert_stop_hook_answers(
        "npm",
        &bin.join("ralph-hooks"),
        "ralph-stop-loop-controller",
        &[("PATH", &bin)],
    );
}

#[test]
fn plugin_folder_carries_the_binaries_and_its_hooks_run_them() {
    let Some(manifest) = manifest() else { return };
    let Some(platform) = host_platform(&manifest) else {
        panic!(
            "no build for this machine's CPU in {}",
            dist_dir().display()
        );
    };
    let market = dist_dir().join(manifest["platforms"][&platform]["plugin"].as_str().unwrap());
    let plugin = market.join("ralph-hooks");
    let bin = plugin.join("bin");
    assert_native_commands("plugin", &bin);
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(plugin.join("hooks/hooks.json")).unwrap())
            .unwrap();
    let mut stop_command = None;
    for (event, groups) in hooks["hooks"].as_object().unwrap() {
        for handler in groups
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|group| group["hooks"].as_array().unwrap())
        {
            let command = handler["command"].as_str().unwrap();
            assert!(
                command.starts_with("\"${CLAUDE_PLUGIN_ROOT}/bin/ralph-"),
                "{event}: {command} does not run the plugin's own binary"
            );
            if event == "Stop" && !command.contains("--rewake") {
                stop_command = Some(command.to_string());
            }
        }
    }
    // PATH without our binaries: the hook must find its own.
    assert_stop_hook_answers(
        "plugin",
        &bin.join("ralph-hooks"),
        &stop_command.expect("a Stop hook"),
        &[
            ("CLAUDE_PLUGIN_ROOT", &plugin),
            ("PATH", Path::new("/usr/bin:/bin")),
        ],
    );
    let Some(claude) = crate::e2e::find_claude() else {
        return;
    };
    let home = TempDir::new("dist-plugin-home");
    let output = Command::new(claude)
        .args(["plugin", "validate", "--strict"])
        .arg(&market)
        .env("HOME", home.path())
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "claude plugin validate --strict {}:\n{}{}",
        market.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The self-contained plugin folder with the real Claude Code CLI: the e2e
/// scenario `tests/e2e/dist-scenarios/plugin-self-contained-loop-completes`
/// (marketplace add + install at project scope, a loop completed through the
/// hooks the plugin carries), run with the plugin's `bin/` as the binaries.
#[test]
fn plugin_folder_runs_a_loop_with_the_real_cli() {
    let Some(manifest) = manifest() else { return };
    let Some(platform) = host_platform(&manifest) else {
        panic!(
            "no build for this machine's CPU in {}",
            dist_dir().display()
        );
    };
    let Some(claude) = crate::e2e::find_claude() else {
        return;
    };
    let Some(python) = util::require_tool("python3", "the e2e runner") else {
        return;
    };
    let bin = dist_dir()
        .join(manifest["platforms"][&platform]["plugin"].as_str().unwrap())
        .join("ralph-hooks/bin");
    let scenario =
        crate::e2e::e2e_dir().join("dist-scenarios/plugin-self-contained-loop-completes");
    let outcome = crate::e2e::run_scenario(&python, &claude, &bin, &scenario);
    assert!(
        outcome.passed,
        "{} failed:\n{}",
        outcome.name, outcome.report
    );
}
