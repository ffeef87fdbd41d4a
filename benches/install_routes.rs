//! The Stop hook's start-up through each install route without Rust, beside
//! the cargo-installed binary and `/bin/true` (the floor), in one run.
//!
//! Each route is installed from `.ci/dist`'s artifacts (`target/dist/`, or
//! `$RALPH_HOOKS_DIST_DIR`) into a temp prefix, offline, and the Stop hook
//! is run as the route's hook command resolves: `venv/bin/…` (pip, which
//! `pipx` and `uv tool` also lay out), `prefix/bin/…` (npm: a symlink to the
//! postinstall's hard link), the plugin's `bin/…`. One more row shows what the
//! postinstall saves: the npm package installed with `--ignore-scripts`,
//! where the command stays the node launcher. "cargo" is this bench's own
//! release build of the hook, what `cargo install --path .` installs.
//!
//! `.ci/dist` (release, static musl) then `cargo bench --bench install_routes`.
//! `.ci/dist --quick` packages debug binaries: compare them with
//! `cargo bench --profile dev --bench install_routes` (the table says which
//! build each side is). `BENCH_RUNS=N` sets the runs per row
//! (default 200).

#[path = "support/procs.rs"]
mod procs;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const HOOK: &str = "ralph-stop-loop-controller";

fn run(command: &mut Command, what: &str) {
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    assert!(status.success(), "{what} failed: {status}");
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let dist = std::env::var_os("RALPH_HOOKS_DIST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist"));
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dist.join("MANIFEST.json")).unwrap_or_else(|error| {
            panic!(
                "{}/MANIFEST.json: {error}: run .ci/dist first",
                dist.display()
            )
        }),
    )
    .expect("MANIFEST.json is JSON");
    let arch = std::env::consts::ARCH;
    let (platform, built) = manifest["platforms"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, built)| built["target"].as_str().unwrap().starts_with(arch))
        .unwrap_or_else(|| panic!("no build for {arch} in {}", dist.display()));
    let root = std::env::temp_dir().join(format!("ralph-bench-routes-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();

    // pip into a venv (pipx and uv tool make the same venv/bin layout).
    let venv = root.join("venv");
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    );
    run(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--no-index",
                "--disable-pip-version-check",
                "--quiet",
            ])
            .arg(dist.join(built["wheel"].as_str().unwrap())),
        "pip install",
    );
    // npm -g, with and without the postinstall.
    let tarballs: Vec<PathBuf> = manifest["npm"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| dist.join(name.as_str().unwrap()))
        .collect();
    let npm_install = |prefix: &Path, extra: &[&str]| {
        run(
            Command::new("npm")
                .args([
                    "install",
                    "--global",
                    "--offline",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                ])
                .arg(prefix)
                .args(extra)
                .args(&tarballs)
                .env("npm_config_registry", "http://127.0.0.1:9/")
                .env("npm_config_cache", root.join("npm-cache")),
            "npm install -g",
        )
    };
    let npm = root.join("npm");
    npm_install(&npm, &[]);
    let npm_launcher = root.join("npm-ignore-scripts");
    npm_install(&npm_launcher, &["--ignore-scripts"]);
    let plugin = dist
        .join(built["plugin"].as_str().unwrap())
        .join("ralph-hooks");

    let project = root.join("project");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let stdin = serde_json::json!({
        "session_id": "205cbbdd-a334-4456-9333-f0dfc3cbd802", "cwd": project,
        "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "done", "background_tasks": [], "session_crons": []
    })
    .to_string();
    let env: &[(&str, &Path)] = &[("CLAUDE_PROJECT_DIR", &project)];
    let nothing = || {};
    // `cargo bench` builds release; `cargo bench --profile dev` compares
    // with `.ci/dist --quick`, whose routes carry the debug build.
    let cargo_profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let programs: Vec<(String, PathBuf)> = vec![
        ("/bin/true (baseline)".into(), PathBuf::from("/bin/true")),
        (
            format!("cargo: this checkout's {cargo_profile} build"),
            PathBuf::from(env!("CARGO_BIN_EXE_ralph-stop-loop-controller")),
        ),
        (
            "wheel: venv/bin (pip, pipx, uv tool)".into(),
            venv.join("bin").join(HOOK),
        ),
        (
            "npm -g: prefix/bin (postinstall hard link)".into(),
            npm.join("bin").join(HOOK),
        ),
        (
            "plugin: ${CLAUDE_PLUGIN_ROOT}/bin".into(),
            plugin.join("bin").join(HOOK),
        ),
        (
            "npm -g --ignore-scripts: the node launcher".into(),
            npm_launcher.join("bin").join(HOOK),
        ),
    ];
    let cases: Vec<procs::Case> = programs
        .iter()
        .map(|(name, program)| procs::Case {
            name,
            prepare: &nothing,
            program,
            args: &[],
            stdin: stdin.as_bytes(),
            env,
        })
        .collect();
    println!(
        "Stop hook start-up by install route ({platform}: {}, {} build of the routes' binaries; no loop running)",
        built["target"].as_str().unwrap(),
        manifest["profile"].as_str().unwrap_or("?")
    );
    let rows = procs::measure_all(&cases, runs);
    procs::print_table(&rows, runs);
    let _ = std::fs::remove_dir_all(&root);
}
