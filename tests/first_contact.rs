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

const NPM_BINARIES: &[&str] = &[
    "ralph-hooks",
    "ralph-session-start",
    "ralph-pre-tool-stop-guard",
    "ralph-stop-loop-controller",
    "ralph-post-tool-lsp-diagnostic",
    "ralph-user-prompt-submit",
];

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A global npm prefix as `npm install -g` leaves it, before postinstall:
/// the main package (launchers, platform.js, postinstall.js, a package.json
/// as .ci/dist writes it, with the checksums of `genuine`) and, beside it,
/// a platform package of `version` whose binaries print `say`.
fn npm_layout(root: &Path, version: &str, say: &str) {
    let modules = root.join("node_modules");
    let main = modules.join("ralph-hooks");
    let platform = modules.join("ralph-hooks-linux-x64-glibc");
    std::fs::create_dir_all(main.join("bin")).unwrap();
    std::fs::create_dir_all(platform.join("bin")).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/npm");
    for file in ["platform.js", "postinstall.js"] {
        std::fs::copy(source.join(file), main.join(file)).unwrap();
    }
    let genuine = |name: &str| format!("#!/bin/sh\necho GENUINE {name}\n");
    let mut checksums = serde_json::Map::new();
    for name in NPM_BINARIES {
        std::fs::copy(source.join("launcher.js"), main.join("bin").join(name)).unwrap();
        checksums.insert(
            name.to_string(),
            sha256_hex(genuine(name).as_bytes()).into(),
        );
        let script = if say == "GENUINE" {
            genuine(name)
        } else {
            format!("#!/bin/sh\necho {say} {name}\n")
        };
        std::fs::write(platform.join("bin").join(name), script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        for file in [main.join("bin").join(name), platform.join("bin").join(name)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let name = "ralph-hooks-linux-x64-glibc";
    let keys: serde_json::Map<String, serde_json::Value> = [
        "linux-x64-glibc",
        "linux-x64-musl",
        "linux-x64",
        "linux-arm64-glibc",
        "linux-arm64",
    ]
    .iter()
    .map(|key| (key.to_string(), name.into()))
    .collect();
    let manifest = serde_json::json!({
        "name": "ralph-hooks",
        "version": "0.1.0",
        "bin": NPM_BINARIES.iter().map(|b| (b.to_string(), format!("bin/{b}").into())).collect::<serde_json::Map<_, _>>(),
        "ralphHooksPlatforms": keys,
        "ralphHooksSha256": {name: checksums},
    });
    std::fs::write(main.join("package.json"), manifest.to_string()).unwrap();
    std::fs::write(
        platform.join("package.json"),
        serde_json::json!({"name": name, "version": version}).to_string(),
    )
    .unwrap();
}

/// Runs postinstall, then the `ralph-hooks` command; its output.
fn npm_postinstall_then_run(root: &Path, node: &Path) -> (String, String) {
    let main = root.join("node_modules/ralph-hooks");
    let postinstall = std::process::Command::new(node)
        .arg(main.join("postinstall.js"))
        .current_dir(&main)
        .output()
        .unwrap();
    assert!(
        postinstall.status.success(),
        "postinstall never fails the install"
    );
    let command = std::process::Command::new(main.join("bin/ralph-hooks"))
        .output()
        .unwrap();
    (text(&postinstall), text(&command))
}

/// The npm postinstall and launchers use a platform package only when its
/// version is the main package's and its binaries have the sha256 recorded
/// at build time: a package planted in a node_modules above, or a squatter's
/// package of the same name, is refused.
#[test]
fn npm_postinstall_links_only_the_binaries_it_was_built_with() {
    if std::env::consts::OS != "linux" {
        return;
    }
    let Some(node) = util::require_tool("node", "the npm postinstall") else {
        return;
    };
    let genuine = TempDir::new("fc-npm-genuine");
    npm_layout(genuine.path(), "0.1.0", "GENUINE");
    let (_, ran) = npm_postinstall_then_run(genuine.path(), &node);
    assert!(ran.contains("GENUINE ralph-hooks"), "{ran}");

    let planted = TempDir::new("fc-npm-planted");
    npm_layout(planted.path(), "6.6.6", "PLANTED");
    let (said, ran) = npm_postinstall_then_run(planted.path(), &node);
    assert!(!ran.contains("PLANTED"), "a planted package ran: {ran}");
    assert!(
        said.contains("6.6.6") && ran.contains("refused"),
        "{said}\n{ran}"
    );

    let altered = TempDir::new("fc-npm-altered");
    npm_layout(altered.path(), "0.1.0", "ALTERED");
    let (said, ran) = npm_postinstall_then_run(altered.path(), &node);
    assert!(!ran.contains("ALTERED"), "an altered binary ran: {ran}");
    assert!(
        said.contains("sha256") && ran.contains("refused"),
        "{said}\n{ran}"
    );
}

/// The dashboard takes requests (and WebSocket upgrades) only from its own
/// page: an Origin that is some other IP literal on the same port is
/// another site.
#[test]
fn the_dashboard_refuses_other_ip_origins() {
    use crate::monitor::{Monitor, seeded_project};
    let temp = seeded_project("fc-origin");
    let monitor = Monitor::start(temp.path(), &[]);
    let port = monitor.port;
    for origin in [
        format!("http://1.2.3.4:{port}"),
        format!("http://10.0.0.5:{port}"),
        format!("http://127.0.0.2:{port}"),
        format!("http://[::2]:{port}"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        let (status, body) = monitor.raw("GET", "/api/agents", &[("Origin", &origin)], b"");
        assert_eq!(status, 403, "{origin}: {body}");
    }
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let (status, body) = monitor.raw("GET", "/api/agents", &[("Origin", &origin)], b"");
        assert_eq!(status, 200, "{origin}: {body}");
    }
    // Reached by another address (a monitor bound to 0.0.0.0): its page's
    // origin is that address, which is also the request's Host.
    let lan = format!("192.168.1.20:{port}");
    let (status, body) = monitor.raw(
        "GET",
        "/api/agents",
        &[("Host", &lan), ("Origin", &format!("http://{lan}"))],
        b"",
    );
    assert_eq!(status, 200, "{body}");
}

/// doctor checks that an active plugin's hooks can run: the repository's
/// plugin names the binaries bare, so they must be on PATH; a plugin whose
/// folder is gone runs nothing.
#[test]
fn doctor_says_when_the_plugins_hooks_cannot_run() {
    let temp = TempDir::new("fc-plugin-doctor");
    let (home, project) = (temp.path().join("home"), temp.path().join("project"));
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let id = "ralph-hooks@ralph-hooks";
    let cache = home.join(".claude/plugins/cache/ralph-hooks/ralph-hooks/0.1.0");
    util::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks-config"),
        &cache,
    );
    let installed = serde_json::json!({"version": 2, "plugins": {id: [{
        "scope": "project", "projectPath": project, "installPath": cache, "version": "0.1.0"}]}});
    std::fs::write(
        home.join(".claude/plugins/installed_plugins.json"),
        installed.to_string(),
    )
    .unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::json!({"enabledPlugins": {id: true}}).to_string(),
    )
    .unwrap();
    let doctor = |path: &std::ffi::OsStr| {
        let mut command = util::command("ralph-hooks", &project);
        command.env("HOME", &home).env("PATH", path).arg("doctor");
        util::run_with_stdin(command, b"")
    };
    let bin_dir = util::bin("ralph-hooks").parent().unwrap().to_path_buf();
    let with_bins =
        std::env::join_paths([bin_dir.as_path(), Path::new("/usr/bin"), Path::new("/bin")])
            .unwrap();
    let output = doctor(&with_bins);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("ok    plugin:"), "{}", text(&output));

    let output = doctor(std::ffi::OsStr::new("/usr/bin:/bin"));
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("PROBLEM plugin:")
            && text(&output).contains("ralph-stop-loop-controller is not on PATH")
            && !text(&output).contains("All good"),
        "{}",
        text(&output)
    );

    std::fs::remove_dir_all(&cache).unwrap();
    let output = doctor(&with_bins);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("is gone"), "{}", text(&output));
}

/// The built plugin does not ship the sandbox variants of the commands:
/// as plugin commands (`/ralph-hooks:sandbox:ralph-loop`) they would tell
/// Claude a loop was started or cancelled when none was. It and every npm
/// package carry the license, and the plugin a README of its own.
#[test]
fn the_built_plugin_has_no_sandbox_commands() {
    let dist = std::env::var_os("RALPH_HOOKS_DIST_DIR")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist"));
    let Ok(text) = std::fs::read_to_string(dist.join("MANIFEST.json")) else {
        assert!(
            !util::servers_required(),
            "no {}/MANIFEST.json: run `.ci/dist --quick`",
            dist.display()
        );
        eprintln!(
            "skipping: no {}/MANIFEST.json (run `.ci/dist --quick`)",
            dist.display()
        );
        return;
    };
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    for platform in manifest["platforms"].as_object().unwrap().values() {
        let plugin = dist
            .join(platform["plugin"].as_str().unwrap())
            .join("ralph-hooks");
        assert!(
            plugin.join("commands/ralph-loop.md").is_file(),
            "{}",
            plugin.display()
        );
        assert!(
            !plugin.join("commands/sandbox").exists(),
            "{} ships the sandbox commands",
            plugin.display()
        );
        // Its own README (not hooks-config's, which expects binaries on
        // PATH) and the license.
        assert!(plugin.join("LICENSE").is_file(), "{}", plugin.display());
        let readme = std::fs::read_to_string(plugin.join("README.md")).unwrap();
        assert!(
            readme.contains("binaries inside") && !readme.contains("cargo install"),
            "{readme}"
        );
    }
    // Every npm package carries the license.
    for tarball in manifest["npm"].as_array().unwrap() {
        let listing = std::process::Command::new("tar")
            .arg("tzf")
            .arg(dist.join(tarball.as_str().unwrap()))
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&listing.stdout);
        assert!(
            listing.lines().any(|line| line == "package/LICENSE"),
            "{tarball}: {listing}"
        );
    }
}

/// `loop status` and `loop cancel` show a goal from loop.json without its
/// control characters, and the restart hint quotes it so that a pasted
/// line runs nothing of it.
#[test]
fn loop_status_and_cancel_escape_the_goal() {
    let temp = git_project("fc-loop-escape");
    let project = temp.path();
    let goal = "evil\u{1b}[31mRED\u{7} $(touch pwned) goal";
    ok(run(project, &["loop", "start", goal, "--promise", "D"]));
    let status = ok(run(project, &["loop", "status"]));
    assert!(
        status.contains("evil") && !status.contains('\u{1b}') && !status.contains('\u{7}'),
        "{status:?}"
    );
    let cancel = ok(run(project, &["loop", "cancel"]));
    assert!(
        !cancel.contains('\u{1b}') && !cancel.contains('\u{7}'),
        "{cancel:?}"
    );
    let hint = cancel
        .lines()
        .find_map(|line| line.strip_prefix("Restart it with: "))
        .unwrap_or_else(|| panic!("{cancel}"));
    assert!(hint.contains("'evil") && !hint.contains("\"evil"), "{hint}");
}

/// A line of events.jsonl that is JSON but no object (`null`, an array)
/// is left out of /api/events and reported, as a line that is not JSON is.
#[test]
fn the_dashboard_leaves_out_event_lines_that_are_not_objects() {
    use crate::monitor::{Monitor, seeded_project};
    use std::io::Write as _;
    let temp = seeded_project("fc-events-null");
    let events = temp.path().join(".claude/orchestrator/events.jsonl");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&events)
        .unwrap();
    file.write_all(b"null\n[1,2]\n\"text\"\n").unwrap();
    let monitor = Monitor::start(temp.path(), &[]);
    let (status, body) = monitor.raw("GET", "/api/events", &[], b"");
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let all = answer["events"].as_array().unwrap();
    assert!(all.iter().all(serde_json::Value::is_object), "{body}");
    assert!(body.contains("not a JSON object"), "{body}");
}

/// doctor does not say "All good" while `disableAllHooks` switches every
/// hook off.
#[test]
fn doctor_reports_disable_all_hooks() {
    let temp = git_project("fc-disable-all");
    let project = temp.path();
    ok(run(project, &["install"]));
    let home = TempDir::new("fc-disable-all-home");
    let doctor = || {
        let mut command = util::command("ralph-hooks", project);
        command.env("HOME", home.path()).arg("doctor");
        util::run_with_stdin(command, b"")
    };
    let before = doctor();
    assert!(before.status.success(), "{}", text(&before));
    std::fs::write(
        project.join(".claude/settings.local.json"),
        "{\"disableAllHooks\": true}",
    )
    .unwrap();
    let after = doctor();
    assert_eq!(after.status.code(), Some(1), "{}", text(&after));
    assert!(
        text(&after).contains("disableAllHooks") && !text(&after).contains("All good"),
        "{}",
        text(&after)
    );
}

// See: sandbox attack T-2: a hook script of the user's in the project,
// which Claude Code runs outside its sandbox; `.claude/hooks/` is
// protected, a script elsewhere is named by doctor.
#[test]
fn doctor_names_hook_scripts_the_agent_can_change() {
    let temp = git_project("fc-hook-scripts");
    let project = temp.path();
    ok(run(project, &["install"]));
    let home = TempDir::new("fc-hook-scripts-home");
    std::fs::create_dir_all(project.join("scripts")).unwrap();
    std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
    std::fs::write(project.join("scripts/fmt.sh"), "exit 0\n").unwrap();
    std::fs::write(project.join(".claude/hooks/lint.sh"), "exit 0\n").unwrap();
    std::fs::write(
        project.join(".claude/settings.local.json"),
        serde_json::json!({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/scripts/fmt.sh"},
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR/.claude/hooks/lint.sh\""},
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let mut command = util::command("ralph-hooks", project);
    command.env("HOME", home.path()).arg("doctor");
    let said = text(&util::run_with_stdin(command, b""));
    assert!(
        said.contains("WARN") && said.contains("scripts/fmt.sh"),
        "{said}"
    );
    assert!(
        !said.contains("lint.sh"),
        "a protected script named: {said}"
    );
}

/// An install that cannot write a slash command registers no hook: the
/// user is told it failed, and nothing of it runs.
#[test]
fn a_failed_install_leaves_no_hook_registered() {
    let temp = git_project("fc-failed-install");
    let project = temp.path();
    // A folder where a command file goes: its write fails.
    std::fs::create_dir_all(project.join(".claude/commands/ralph-loop.md")).unwrap();
    let install = run(project, &["install"]);
    assert!(!install.status.success(), "{}", text(&install));
    let settings =
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap_or_default();
    assert!(
        !settings.contains("ralph-stop-loop-controller"),
        "{settings}"
    );
}

/// A tracked settings.json that was empty, or whose `hooks` held nothing,
/// gets its own bytes back at uninstall.
#[test]
fn an_empty_settings_file_comes_back_as_it_was() {
    for before in [
        "",
        "{\"hooks\": null}\n",
        "{\"hooks\": []}\n",
        "{ \"hooks\": {} }",
    ] {
        let temp = git_project("fc-empty-settings");
        let project = temp.path();
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(project.join(".claude/settings.json"), before).unwrap();
        git(project, &["add", "-A"]);
        git(project, &["commit", "-q", "-m", "settings"]);
        ok(run(project, &["install"]));
        ok(run(project, &["install", "--uninstall"]));
        assert_eq!(
            std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
            before
        );
        assert_eq!(git(project, &["status", "--porcelain"]), "", "{before:?}");
    }
}

/// A `--project` that does not exist is refused by every command, as by
/// install: no folder is made for a mistyped path.
#[test]
fn a_missing_project_is_refused() {
    let temp = TempDir::new("fc-missing-project");
    let missing = temp.path().join("typo");
    let missing_text = missing.to_str().unwrap();
    for args in [
        &["loop", "start", "x", "--project", missing_text][..],
        &["status", "--project", missing_text][..],
    ] {
        let output = run(temp.path(), args);
        assert!(!output.status.success(), "{args:?}: {}", text(&output));
        assert!(
            text(&output).contains("does not exist"),
            "{}",
            text(&output)
        );
    }
    assert!(!missing.exists());
}

/// A second monitor of the same project, stopping, puts the first one's
/// record (and token) back in monitor.json instead of deleting it.
#[test]
fn a_second_monitor_leaves_the_first_ones_record() {
    use crate::monitor::{Monitor, seeded_project};
    let temp = seeded_project("fc-two-monitors");
    let record = temp.path().join(".claude/orchestrator/monitor.json");
    let first = Monitor::start(temp.path(), &[]);
    let mut second = Monitor::start(temp.path(), &[]);
    assert!(
        std::fs::read_to_string(&record)
            .unwrap()
            .contains(&second.token)
    );
    second.stop();
    let text = std::fs::read_to_string(&record).expect("the first monitor's record stays");
    assert!(text.contains(&first.token), "{text}");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&record).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// doctor says when the guard cannot make its watch folder (it would
/// check no Bash command), instead of "All good".
#[test]
fn doctor_reports_a_watch_folder_it_cannot_make() {
    let temp = git_project("fc-watch-folder");
    let project = temp.path();
    ok(run(project, &["install"]));
    let blocked = project.join("not-a-folder");
    std::fs::write(&blocked, "").unwrap();
    let mut command = util::command("ralph-hooks", project);
    command.env("XDG_STATE_HOME", &blocked).arg("doctor");
    let output = util::run_with_stdin(command, b"");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("watch folder"), "{}", text(&output));
}

/// `install --uninstall --purge` stops the project's dashboard, which
/// would otherwise serve a project whose state is gone.
#[test]
fn purge_stops_the_projects_dashboard() {
    use crate::monitor::{Monitor, seeded_project};
    let temp = seeded_project("fc-purge-monitor");
    let project = temp.path();
    ok(run(project, &["install"]));
    let _monitor = Monitor::start(project, &[]);
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/monitor.json")).unwrap(),
    )
    .unwrap();
    let pid = record["pid"].as_u64().unwrap();
    let said = ok(run(project, &["install", "--uninstall", "--purge"]));
    assert!(said.contains("Stopped the dashboard"), "{said}");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "the monitor still runs: {stat}"
    );
}

/// The npm node launcher (used without the postinstall) passes SIGTERM on
/// to the program and ends by it: killing the command leaves no orphan.
#[test]
fn the_npm_launcher_passes_signals_on() {
    use std::os::unix::process::ExitStatusExt as _;
    if std::env::consts::OS != "linux" {
        return;
    }
    let Some(_node) = util::require_tool("node", "the npm launcher") else {
        return;
    };
    let temp = TempDir::new("fc-npm-signal");
    npm_layout(temp.path(), "0.1.0", "GENUINE");
    let modules = temp.path().join("node_modules");
    let script = "#!/bin/sh\nexec sleep 30\n";
    std::fs::write(
        modules.join("ralph-hooks-linux-x64-glibc/bin/ralph-hooks"),
        script,
    )
    .unwrap();
    let manifest_path = modules.join("ralph-hooks/package.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["ralphHooksSha256"]["ralph-hooks-linux-x64-glibc"]["ralph-hooks"] =
        sha256_hex(script.as_bytes()).into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let mut launcher = std::process::Command::new(modules.join("ralph-hooks/bin/ralph-hooks"))
        .spawn()
        .unwrap();
    let children = format!("/proc/{0}/task/{0}/children", launcher.id());
    let mut child = None;
    for _ in 0..200 {
        child = std::fs::read_to_string(&children)
            .ok()
            .and_then(|text| text.split_whitespace().next().map(str::to_string));
        if child.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let child = child.expect("the launcher started the program");
    unsafe { libc::kill(launcher.id() as libc::pid_t, libc::SIGTERM) };
    let status = launcher.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let mut gone = false;
    for _ in 0..200 {
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        if stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    if !gone {
        unsafe { libc::kill(child.parse::<i32>().unwrap(), libc::SIGKILL) };
    }
    assert!(gone, "the program {child} outlived its launcher");
}

/// A slash command the user edited after install (the mark kept) is left
/// alone by a second install and kept by uninstall.
#[test]
fn an_edited_slash_command_is_neither_overwritten_nor_deleted() {
    let temp = git_project("fc-edited-command");
    let project = temp.path();
    ok(run(project, &["install"]));
    let path = project.join(".claude/commands/ralph-loop.md");
    let edited = std::fs::read_to_string(&path).unwrap().replacen(
        "Work on the goal.",
        "Work on the goal. My own line.",
        1,
    );
    std::fs::write(&path, &edited).unwrap();
    let again = run(project, &["install"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("edited after install"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    let uninstall = ok(run(project, &["install", "--uninstall"]));
    assert!(uninstall.contains("Kept"), "{uninstall}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    assert!(!project.join(".claude/commands/ralph-check.md").exists());
}

/// doctor sees our hooks registered in settings.local.json too: with the
/// ones in settings.json they run twice.
#[test]
fn doctor_reports_hooks_registered_in_another_settings_file() {
    let temp = git_project("fc-local-twice");
    let project = temp.path();
    ok(run(project, &["install"]));
    let home = TempDir::new("fc-local-twice-home");
    let shared = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    std::fs::write(project.join(".claude/settings.local.json"), &shared).unwrap();
    let mut command = util::command("ralph-hooks", project);
    command.env("HOME", home.path()).arg("doctor");
    let output = util::run_with_stdin(command, b"");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("registered twice") && text(&output).contains("settings.local.json"),
        "{}",
        text(&output)
    );
}
