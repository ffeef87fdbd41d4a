//! The guard's check of what a Bash command did, through the real binaries:
//! `ralph-pre-tool-stop-guard` takes the snapshot, the command runs in a
//! real `bash` (with Claude Code's environment: `CLAUDECODE=1`, our CLI on
//! `PATH`), then `ralph-post-tool-lsp-diagnostic` compares, puts back and
//! reports. Each bypass the text reading cannot see — a script written and
//! run at once, an alias, a make target, `python -c`, `perl -e`, `node -e`,
//! a symlink swap, a hard link, `rm -rf .claude`, `git clean`, `git stash
//! -u`, the CLI through a script, a push to a local bare remote — is caught
//! and undone (or, for a push, the loop paused); ordinary work is not
//! touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "205cbbdd-a334-4456-9333-f0dfc3cbd802";
const TASK: &str = "task_20261121T110000Z";
const CONFIG: &str = "{\"guard\": {\"state_files\": true}}\n";
const SETTINGS: &str = "{\"hooks\": {\"PreToolUse\": []}}\n";

fn loop_json(project: &Path, status: &str) -> Value {
    json!({
        "version": 1, "id": "loop-20261121T110000Z-0001", "status": status,
        "goal": "make the test suite pass", "promise": "DONE", "checks": [],
        "check_timeout_secs": 30, "diagnostics": false, "no_warnings": false,
        "iteration": 2, "max_iterations": 50, "session_id": SESSION,
        "project_root": project.display().to_string(),
        "started_at": "2026-11-21T11:00:00Z", "updated_at": "2026-11-21T11:00:00Z",
        "ended_at": null, "completion_reason": null, "consecutive_blocks": 0,
        "touched_files": [], "history": []
    })
}

fn task_md(status: &str, open: bool) -> String {
    format!(
        "# Task: {TASK}\n\n## Metadata\n\n- **Status:** {status}\n- **Priority:** high\n- **Created:** 2026-11-21T11:00:00.000Z\n- **Session:** {SESSION}\n\n## Description\n\nAdd OAuth login\n\n## Steps\n\n- [x] (s1) Read the auth code\n- [{}] (s2) Add the Google strategy\n- [ ] (s3) Add the GitHub callback\n\n## Progress\n\n- Task started\n\n## Last Activity\n\n2026-11-21T11:30:00.000Z\n",
        if open { ">" } else { "x" }
    )
}

fn git(project: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(project)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(
        status.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// A git project with a RUNNING loop, an active task with open steps, the
/// hooks' config, Claude Code's settings and a committed source file.
fn supervised(label: &str) -> TempDir {
    let dir = TempDir::new(label);
    supervise(dir.path());
    dir
}

/// [`supervised`] in a folder of the caller's.
fn supervise(project: &Path) {
    let state = project.join(".claude/orchestrator");
    std::fs::create_dir_all(state.join("tasks")).unwrap();
    std::fs::write(
        state.join("loop.json"),
        loop_json(project, "RUNNING").to_string(),
    )
    .unwrap();
    std::fs::write(
        state.join("tasks/active.json"),
        json!({"version": 1, "task_id": TASK}).to_string(),
    )
    .unwrap();
    std::fs::write(
        state.join(format!("tasks/{TASK}.md")),
        task_md("in_progress", true),
    )
    .unwrap();
    std::fs::write(project.join(".claude/ralph-hooks.json"), CONFIG).unwrap();
    std::fs::write(project.join(".claude/settings.json"), SETTINGS).unwrap();
    std::fs::write(project.join(".lsp.json"), "{}\n").unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/app.txt"), "one\n").unwrap();
    git(project, &["init", "-q", "-b", "main"]);
    git(project, &["add", "src"]);
    git(project, &["commit", "-qm", "start"]);
}

fn input(project: &Path, event: &str, id: &str, command: &str, stdout: &str) -> Vec<u8> {
    let mut input = json!({
        "hook_event_name": event, "session_id": SESSION, "cwd": project,
        "tool_name": "Bash", "tool_input": {"command": command, "description": "x"},
        "tool_use_id": id,
    });
    if event == "PostToolUse" {
        input["tool_response"] =
            json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false});
    }
    if event == "PostToolUseFailure" {
        // As Claude Code 2.1.332 sends it: no `tool_response`.
        input["error"] = json!(format!("Exit code 1\n{stdout}"));
        input["is_interrupt"] = json!(false);
        input["duration_ms"] = json!(28);
    }
    serde_json::to_vec(&input).unwrap()
}

fn pre(project: &Path, id: &str, command: &str) -> Output {
    util::run_with_stdin(
        util::command("ralph-pre-tool-stop-guard", project),
        &input(project, "PreToolUse", id, command, ""),
    )
}

fn post(project: &Path, id: &str, command: &str, stdout: &str) -> Output {
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", project),
        &input(project, "PostToolUse", id, command, stdout),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "post hook: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `command` as Claude Code's Bash tool would: `bash -c` in the
/// project, inside Claude Code, our CLI on PATH.
fn run(project: &Path, command: &str) -> Output {
    let bin_dir = util::bin("ralph-hooks").parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut shell = util::command("ralph-hooks", project);
    shell
        .env("PATH", path)
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_SESSION_ID", SESSION)
        .env_remove("RALPH_HOOKS_NOW")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    let mut bash = Command::new("bash");
    bash.arg("-c").arg(command).current_dir(project);
    for (key, value) in shell.get_envs() {
        match value {
            Some(value) => bash.env(key, value),
            None => bash.env_remove(key),
        };
    }
    bash.output().expect("bash")
}

/// One Bash call through both hooks; the guard must let it through.
/// Returns the post hook's JSON (or `Null` when silent) and the command's output.
fn call(project: &Path, id: &str, command: &str) -> (Value, Output) {
    let before = pre(project, id, command);
    assert_eq!(before.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&before.stdout).contains("\"deny\""),
        "the guard denied {command:?} before it ran: {}",
        String::from_utf8_lossy(&before.stdout)
    );
    let ran = run(project, command);
    let after = post(project, id, command, &String::from_utf8_lossy(&ran.stdout));
    let value = serde_json::from_slice(&after.stdout).unwrap_or(Value::Null);
    (value, ran)
}

fn context(output: &Value) -> String {
    output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn message(output: &Value) -> String {
    output["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn loop_status(project: &Path) -> String {
    let state: Value =
        serde_json::from_str(&read(project.join(".claude/orchestrator/loop.json"))).unwrap();
    state["status"].as_str().unwrap().to_string()
}

fn events(project: &Path) -> Vec<Value> {
    std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Every protected file is as `supervised` wrote it.
fn assert_intact(project: &Path, what: &str) {
    assert_eq!(
        read(project.join(".claude/ralph-hooks.json")),
        CONFIG,
        "{what}: config"
    );
    assert_eq!(
        read(project.join(".claude/settings.json")),
        SETTINGS,
        "{what}: settings"
    );
    assert_eq!(read(project.join(".lsp.json")), "{}\n", "{what}: .lsp.json");
    assert_eq!(loop_status(project), "RUNNING", "{what}: loop");
    assert_eq!(
        read(project.join(format!(".claude/orchestrator/tasks/{TASK}.md"))),
        task_md("in_progress", true),
        "{what}: task"
    );
    assert!(
        std::fs::symlink_metadata(project.join(".claude/orchestrator"))
            .unwrap()
            .is_dir(),
        "{what}: the state root is a real folder"
    );
    assert!(
        !project.join(".claude/settings.local.json").exists(),
        "{what}: no settings.local.json"
    );
}

/// Commands the text reading cannot judge, each changing a protected file:
/// every change is caught after the fact, put back, told to Claude and the
/// user, and logged.
#[test]
fn changes_the_text_cannot_see_are_undone() {
    let cases: &[(&str, &str)] = &[
        (
            "script-then-run",
            "printf 'echo \"{\\\\\"guard\\\\\":{\\\\\"loop_commands\\\\\":[]}}\" > .claude/ralph-hooks.json\\n' > s.sh && sh s.sh",
        ),
        (
            "alias",
            "shopt -s expand_aliases\nalias wipe='rm -rf .claude/orchestrator'\nwipe",
        ),
        (
            "make target",
            "printf 'clean:\\n\\trm -f .lsp.json .claude/settings.json\\n' > Makefile && make -s clean",
        ),
        (
            "python -c",
            "python3 -c \"import os; os.remove('.claude/orchestrator/loop.json')\"",
        ),
        (
            "perl -e",
            "perl -e 'open(my $f, \">\", \".claude/ralph-hooks.json\"); print $f \"{}\"'",
        ),
        (
            "node -e",
            "node -e \"require('fs').writeFileSync('.claude/settings.local.json', '{\\\"disableAllHooks\\\": true}')\"",
        ),
        (
            "sh script.sh",
            "echo 'sed -i s/in_progress/completed/ .claude/orchestrator/tasks/*.md' > fix.sh && sh fix.sh",
        ),
        (
            "rm -rf .claude, by python",
            "python3 -c \"import shutil; shutil.rmtree('.claude')\"",
        ),
        (
            "git clean -fdx, spelled through a variable",
            "c=clean; git $c -fdx -q",
        ),
        (
            "git stash -u, spelled through a variable",
            "s=stash; git $s -u -q",
        ),
        (
            "truncate through a variable",
            "f=.lsp.json; truncate -s 0 $f",
        ),
        (
            "symlink swap of the state root",
            "python3 -c \"import os,shutil; shutil.copytree('.claude/orchestrator','o2'); shutil.rmtree('.claude/orchestrator'); os.symlink(os.path.abspath('o2'),'.claude/orchestrator')\" && sed -i s/RUNNING/CANCELLED/ o2/loop.json",
        ),
        (
            "symlink swap of a config file",
            "python3 -c \"import os; open('evil.json','w').write('{}'); os.remove('.lsp.json'); os.symlink('evil.json','.lsp.json')\"",
        ),
    ];
    for (index, (label, command)) in cases.iter().enumerate() {
        let dir = supervised("effects-undone");
        let project = dir.path();
        let id = format!("toolu_{index:02}");
        let (output, ran) = call(project, &id, command);
        let said = context(&output);
        assert!(
            said.contains("They were restored") && !said.contains("could NOT"),
            "{label}: {said}\n{output}\ncommand stderr: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert!(
            message(&output).contains("ralph-hooks guard: a Bash command"),
            "{label}: {output}"
        );
        assert_intact(project, label);
        let logged = events(project)
            .iter()
            .any(|event| event["data"]["event"] == "protected_restored");
        assert!(logged, "{label}: no guard_event in events.jsonl");
    }
}

// See: sandbox attack S-1: a hard link made before the loop is the same
// file under a name the sandbox (and the text reading) does not protect;
// `{"disableAllHooks": true}` written through it silenced the hooks.
// Before a Bash command every protected file with another name gets a file
// of its own, so a write through the other name changes only that name.
#[test]
fn a_hard_link_made_before_the_loop_no_longer_reaches_the_protected_file() {
    let dir = supervised("effects-hard-link");
    let project = dir.path();
    for (protected, other) in [
        (".claude/orchestrator/loop.json", "h.json"),
        (".claude/settings.local.json", "notes-local.txt"),
    ] {
        if !project.join(protected).exists() {
            std::fs::write(project.join(protected), "{}\n").unwrap();
        }
        std::fs::hard_link(project.join(protected), project.join(other)).unwrap();
    }
    let before = read(project.join(".claude/settings.local.json"));
    let command = "python3 -c \"t=open('h.json').read(); open('h.json','w').write(t.replace('RUNNING','CANCELLED')); open('notes-local.txt','w').write('{\\\"disableAllHooks\\\": true}')\"";
    let pre_output = pre(project, "toolu_h", command);
    let said = String::from_utf8_lossy(&pre_output.stdout).into_owned();
    assert!(said.contains("a file of its own"), "{said}");
    assert!(said.contains("settings.local.json"), "{said}");
    let ran = run(project, command);
    assert!(ran.status.success(), "{ran:?}");
    let after = post(project, "toolu_h", command, "");
    assert_eq!(loop_status(project), "RUNNING", "{after:?}");
    assert_eq!(read(project.join(".claude/settings.local.json")), before);
    assert!(read(project.join("notes-local.txt")).contains("disableAllHooks"));
}

// See: sandbox attacks T-1 and T-2: Claude Code runs the servers of the
// project's `.mcp.json` (at the next session) and the scripts in
// `.claude/hooks/` that registered hooks name, both outside every
// sandbox; the Write tool rewrote them while the loop ran, a planted hard
// link reached `.mcp.json`, and the rewritten code wrote
// `disableAllHooks`. They are protected like the settings: the file tools
// are denied, a Bash command's change is put back, other names separated.
#[test]
fn what_claude_code_runs_outside_its_sandbox_is_protected() {
    let dir = supervised("effects-mcp-hooks");
    let project = dir.path();
    std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
    std::fs::write(project.join(".claude/hooks/fmt.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::write(project.join(".mcp.json"), "{\"mcpServers\": {}}\n").unwrap();
    for file in [".mcp.json", ".claude/hooks/fmt.sh"] {
        let tool = util::run_with_stdin(
            util::command("ralph-pre-tool-stop-guard", project),
            &serde_json::to_vec(&json!({
                "hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
                "tool_name": "Write", "tool_use_id": "toolu_w",
                "tool_input": {"file_path": project.join(file), "content": "{}"},
            }))
            .unwrap(),
        );
        let said = String::from_utf8_lossy(&tool.stdout).into_owned();
        assert!(
            said.contains("\"deny\""),
            "{file}: the Write tool was let through: {said}"
        );
    }
    std::fs::hard_link(project.join(".mcp.json"), project.join("notes-mcp.txt")).unwrap();
    let command = "python3 -c \"open('notes-mcp.txt','w').write('{}'); open('.cl'+'aude/hooks/fmt.sh','a').write('echo pwned')\"";
    let said = String::from_utf8_lossy(&pre(project, "toolu_m", command).stdout).into_owned();
    assert!(said.contains("a file of its own"), "{said}");
    let ran = run(project, command);
    assert!(ran.status.success(), "{ran:?}");
    let after: Value = serde_json::from_slice(&post(project, "toolu_m", command, "").stdout)
        .unwrap_or(Value::Null);
    assert!(context(&after).contains("put back"), "{after}");
    assert_eq!(read(project.join(".mcp.json")), "{\"mcpServers\": {}}\n");
    assert_eq!(
        read(project.join(".claude/hooks/fmt.sh")),
        "#!/bin/sh\nexit 0\n"
    );
}

// See: the re-check of the sixth round: an installed plugin's hook script
// (N-2), rewritten by the Write tool, switched the hooks off at its next
// run; an MCP server added for the project in Claude Code's own
// `.claude.json` (N-1) started outside every sandbox at the next session.
// The plugins are protected like the hooks folder; `.claude.json`, which
// Claude Code rewrites itself all along, is denied to the file tools but
// not watched.
#[test]
fn installed_plugins_and_claude_codes_own_state_are_protected() {
    let dir = supervised("effects-plugins");
    let project = dir.path();
    let config = TempDir::new("effects-plugins-config");
    let script = config.path().join("plugins/cache/m/p/1.0.0/hooks/h.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "exit 0\n").unwrap();
    std::fs::write(config.path().join(".claude.json"), "{}").unwrap();
    let with_config = |name: &str, input: Vec<u8>| {
        let mut command = util::command(name, project);
        command.env("CLAUDE_CONFIG_DIR", config.path());
        util::run_with_stdin(command, &input)
    };
    for file in [script.clone(), config.path().join(".claude.json")] {
        let said = with_config(
            "ralph-pre-tool-stop-guard",
            serde_json::to_vec(&json!({
                "hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
                "tool_name": "Write", "tool_use_id": "toolu_w",
                "tool_input": {"file_path": file, "content": "{}"},
            }))
            .unwrap(),
        );
        let said = String::from_utf8_lossy(&said.stdout).into_owned();
        assert!(
            said.contains("\"deny\""),
            "{}: let through: {said}",
            file.display()
        );
    }
    let command = format!(
        "python3 -c \"open('{}','a').write('echo off')\"",
        script.display()
    );
    let before = with_config(
        "ralph-pre-tool-stop-guard",
        input(project, "PreToolUse", "toolu_p", &command, ""),
    );
    assert!(!String::from_utf8_lossy(&before.stdout).contains("deny"));
    let ran = run(project, &command);
    assert!(ran.status.success(), "{ran:?}");
    let after = with_config(
        "ralph-post-tool-lsp-diagnostic",
        input(project, "PostToolUse", "toolu_p", &command, ""),
    );
    let after: Value = serde_json::from_slice(&after.stdout).unwrap_or(Value::Null);
    assert!(context(&after).contains("put back"), "{after}");
    assert_eq!(read(script), "exit 0\n");
}

// See: the fourth check of the fifth round: with no Bash command before
// the first Stop, the loop's (walled) check wrote `.git/config` through a
// hard link made before the loop. The Stop gives the protected files and
// git's config files of their own before it runs the checks.
#[test]
fn a_stop_undoes_hard_links_before_the_checks_run() {
    let dir = supervised("effects-stop-hard-link");
    let project = dir.path();
    std::fs::hard_link(project.join(".git/config"), project.join("gitcfg.txt")).unwrap();
    std::fs::hard_link(
        project.join(".claude/settings.json"),
        project.join("settings.txt"),
    )
    .unwrap();
    hook(
        project,
        "ralph-stop-loop-controller",
        stop_input(project, "All done."),
    );
    use std::os::unix::fs::MetadataExt;
    for file in [".git/config", ".claude/settings.json"] {
        let links = std::fs::metadata(project.join(file)).unwrap().nlink();
        assert_eq!(links, 1, "{file} still has another name");
    }
}

/// The CLI is ralph-hooks' own writer, but ending the loop or weakening the
/// task from inside Claude Code through a script the text cannot read is
/// undone too.
#[test]
fn the_cli_through_a_script_cannot_end_the_loop_or_force_the_task() {
    let dir = supervised("effects-cli-script");
    let project = dir.path();
    let (output, ran) = call(
        project,
        "toolu_c1",
        "echo 'ralph-hooks loop cancel' > c.sh && sh c.sh",
    );
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("Cancelled"),
        "the CLI ran: {ran:?}"
    );
    assert!(
        context(&output).contains("loop.json (changed, put back)"),
        "{output}"
    );
    assert_eq!(loop_status(project), "RUNNING");

    let (output, ran) = call(
        project,
        "toolu_c2",
        "echo 'ralph-hooks task complete --force' > f.sh && sh f.sh",
    );
    assert!(ran.status.success(), "{ran:?}");
    assert!(context(&output).contains(TASK), "{output}");
    assert_intact(project, "after --force through a script");
    let active: Value = serde_json::from_str(&read(
        project.join(".claude/orchestrator/tasks/active.json"),
    ))
    .unwrap();
    assert_eq!(active["task_id"], TASK, "the task is active again");
}

/// Ordinary work in the same loop — edits, builds, `git add`, `git commit`,
/// the task CLI — is never touched, and the check says nothing.
#[test]
fn ordinary_work_is_never_touched() {
    let dir = supervised("effects-ordinary");
    let project = dir.path();
    for (index, command) in [
        "sed -i s/one/two/ src/app.txt && echo three >> src/app.txt",
        "mkdir -p build && cp src/app.txt build/app.out && python3 -m py_compile /dev/null 2>/dev/null; true",
        "git add -A src build && git commit -qm 'work'",
        "ralph-hooks task step complete s2 && ralph-hooks task progress 'Google strategy done'",
        "ralph-hooks loop status > /dev/null",
        "rm -rf build && git status --short",
        "echo notes > notes.txt && mv notes.txt NOTES.md",
    ]
    .iter()
    .enumerate()
    {
        let (output, ran) = call(project, &format!("toolu_o{index}"), command);
        assert!(ran.status.success(), "{command}: {}", String::from_utf8_lossy(&ran.stderr));
        assert!(!context(&output).contains("guard"), "{command}: {output}");
        assert!(!message(&output).contains("guard"), "{command}: {output}");
    }
    assert_eq!(read(project.join("src/app.txt")), "two\nthree\n");
    let task = read(project.join(format!(".claude/orchestrator/tasks/{TASK}.md")));
    assert!(
        task.contains("- [x] (s2) Add the Google strategy"),
        "the step stays done: {task}"
    );
    assert!(task.contains("Google strategy done"));
    assert_eq!(loop_status(project), "RUNNING");
    assert!(project.join("NOTES.md").exists());
}

/// Two Bash calls at once: the first to finish puts the file back, and the
/// second does not take that for a change of its own.
#[test]
fn parallel_calls_restore_once() {
    let dir = supervised("effects-parallel");
    let project = dir.path();
    let command_a = "python3 -c \"open('.lsp.json','w').write('{\\\"x\\\":1}')\"";
    assert!(!String::from_utf8_lossy(&pre(project, "toolu_a", command_a).stdout).contains("deny"));
    assert!(!String::from_utf8_lossy(&pre(project, "toolu_b", "true").stdout).contains("deny"));
    run(project, command_a);
    let after_a: Value =
        serde_json::from_slice(&post(project, "toolu_a", command_a, "").stdout).unwrap();
    assert!(
        context(&after_a).contains(".lsp.json (changed, put back)"),
        "{after_a}"
    );
    let after_b = post(project, "toolu_b", "true", "");
    assert!(
        after_b.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&after_b.stdout)
    );
    assert_intact(project, "parallel");
}

/// A bare repository as `origin`, and a feature commit to push.
fn with_remote(project: &Path) -> PathBuf {
    let remote = project.with_extension("remote.git");
    let status = Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&remote)
        .output()
        .unwrap();
    assert!(status.status.success());
    git(
        project,
        &["remote", "add", "origin", &remote.display().to_string()],
    );
    git(project, &["push", "-q", "origin", "main"]);
    std::fs::write(project.join("src/app.txt"), "pushed\n").unwrap();
    git(project, &["commit", "-qam", "feature"]);
    remote
}

/// Pushes to a local bare remote through a script, an alias, a make target
/// and `python -c`: each is seen after the fact, the loop is paused by the
/// guard, and the user is told what went where. A fetch is not a push.
#[test]
fn pushes_are_seen_after_the_fact_and_pause_the_loop() {
    for (label, command) in [
        (
            "script",
            "echo 'git push -q origin HEAD:main' > p.sh && sh p.sh",
        ),
        (
            "alias",
            "shopt -s expand_aliases\nalias ship='git push -q origin HEAD:main'\nship",
        ),
        (
            "make target",
            "printf 'ship:\\n\\tgit push -q origin HEAD:main\\n' > Makefile && make -s ship",
        ),
        (
            "python -c",
            "python3 -c \"import subprocess; subprocess.run(['git','push','-q','origin','HEAD:main'])\"",
        ),
    ] {
        let dir = supervised("effects-push");
        let project = dir.path();
        let remote = with_remote(project);
        let (fetched, _) = call(project, "toolu_f", "git fetch -q origin");
        assert!(
            !message(&fetched).contains("pushed"),
            "{label}: a fetch is no push: {fetched}"
        );
        let (output, _) = call(project, "toolu_p", command);
        let told = message(&output);
        assert!(
            told.contains("pushed main → origin/main"),
            "{label}: {output}"
        );
        assert!(
            told.contains(&remote.display().to_string()),
            "{label}: names where: {told}"
        );
        assert!(told.contains("cannot be undone"), "{label}: {told}");
        assert!(context(&output).contains("Stop here"), "{label}: {output}");
        let state: Value =
            serde_json::from_str(&read(project.join(".claude/orchestrator/loop.json"))).unwrap();
        assert_eq!(state["status"], "PAUSED", "{label}");
        assert_eq!(state["paused_by"], "guard", "{label}");
        let kinds: Vec<Value> = events(project)
            .iter()
            .map(|e| e["data"]["event"].clone())
            .collect();
        assert!(
            kinds.contains(&json!("publish_detected")),
            "{label}: {kinds:?}"
        );
        assert!(kinds.contains(&json!("loop_paused")), "{label}: {kinds:?}");
        let _ = std::fs::remove_dir_all(&remote);
    }
}

/// A registry upload shows only in the command's output.
#[test]
fn a_publish_in_the_output_pauses_the_loop() {
    let dir = supervised("effects-publish");
    let project = dir.path();
    let command = "printf 'npm notice Publishing to https://registry.npmjs.org/ with tag latest\\n+ demo@1.0.3\\n'";
    let (output, _) = call(project, "toolu_np", command);
    assert!(
        message(&output).contains("published npm package demo@1.0.3"),
        "{output}"
    );
    assert_eq!(loop_status(project), "PAUSED");
}

/// Outside a loop or a continuation nothing is snapshotted, nothing is put
/// back and nothing is said; the watch folder of an earlier loop goes away.
#[test]
fn outside_unattended_work_nothing_happens() {
    let _quiet = NOTHING_LEFT_RUNNING
        .read()
        .unwrap_or_else(|e| e.into_inner());
    let dir = supervised("effects-idle");
    let project = dir.path();
    call(project, "toolu_1", "true");
    let watch = watch_dir(project);
    assert!(
        watch.join("base.json").exists(),
        "a snapshot while the loop runs"
    );
    // The loop ends and the task is done.
    std::fs::write(
        project.join(".claude/orchestrator/loop.json"),
        loop_json(project, "COMPLETED").to_string(),
    )
    .unwrap();
    std::fs::write(
        project.join(format!(".claude/orchestrator/tasks/{TASK}.md")),
        task_md("completed", false).replace("- [ ] (s3)", "- [x] (s3)"),
    )
    .unwrap();
    let (output, _) = call(
        project,
        "toolu_2",
        "python3 -c \"open('.lsp.json','w').write('{}')\" && echo x > .claude/ralph-hooks.json",
    );
    assert_eq!(output, Value::Null);
    assert_eq!(
        read(project.join(".claude/ralph-hooks.json")),
        "x\n",
        "the user's own change stands"
    );
    assert!(!watch.exists(), "the watch folder is gone");
}

fn watch_dir(project: &Path) -> PathBuf {
    let root = project.join(".claude/orchestrator").canonicalize().unwrap();
    let hash = fnv1a(root.to_string_lossy().as_bytes());
    util::test_state_home()
        .join("ralph-hooks")
        .join(format!("{hash:016x}"))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The snapshot lives outside the project, in a private folder, so `rm -rf
/// .claude` cannot take it; a change between Bash calls (the user's own,
/// from a terminal) is taken as it is.
#[test]
fn snapshots_live_outside_the_project_and_the_users_changes_stand() {
    let _quiet = NOTHING_LEFT_RUNNING
        .read()
        .unwrap_or_else(|e| e.into_inner());
    use std::os::unix::fs::PermissionsExt;
    let dir = supervised("effects-watch");
    let project = dir.path();
    call(project, "toolu_1", "true");
    let watch = watch_dir(project);
    assert!(!watch.starts_with(project));
    let mode = std::fs::metadata(&watch).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // The user edits the config between two calls.
    std::fs::write(
        project.join(".claude/ralph-hooks.json"),
        "{\"guard\": {}}\n",
    )
    .unwrap();
    let (output, _) = call(project, "toolu_2", "true");
    assert_eq!(output, Value::Null, "nothing to put back");
    assert_eq!(
        read(project.join(".claude/ralph-hooks.json")),
        "{\"guard\": {}}\n"
    );
}

/// `guard.protected` adds the user's paths; a file too large to keep a copy
/// of is reported as changed and not put back.
#[test]
fn user_protected_paths_and_the_size_bound() {
    let dir = supervised("effects-user-paths");
    let project = dir.path();
    std::fs::write(
        project.join(".claude/ralph-hooks.json"),
        "{\"guard\": {\"protected\": [\"secrets/\", \"big.bin\"]}}\n",
    )
    .unwrap();
    std::fs::create_dir_all(project.join("secrets")).unwrap();
    std::fs::write(project.join("secrets/key.txt"), "k\n").unwrap();
    std::fs::write(project.join("big.bin"), vec![b'x'; 5 * 1024 * 1024]).unwrap();
    let text = pre(project, "toolu_t", "echo y > secrets/key.txt");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("deny"),
        "the text rule sees a listed path"
    );
    let (output, _) = call(
        project,
        "toolu_u",
        "python3 -c \"open('secrets/key.txt','w').write('y'); open('big.bin','a').write('y')\"",
    );
    let said = context(&output);
    assert!(
        said.contains("secrets/key.txt (changed, put back)"),
        "{said}"
    );
    assert!(
        said.contains("big.bin (changed, could NOT be put back: no copy was kept"),
        "{said}"
    );
    assert_eq!(read(project.join("secrets/key.txt")), "k\n");
}

// Issue 31, class 1: a failing command (PostToolUseFailure), and a check
// whose hook never ran.

fn post_failure(project: &Path, id: &str, command: &str, output: &str) -> Value {
    let ran = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", project),
        &input(project, "PostToolUseFailure", id, command, output),
    );
    assert_eq!(
        ran.status.code(),
        Some(0),
        "post hook on a failure: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    serde_json::from_slice(&ran.stdout).unwrap_or(Value::Null)
}

/// One Bash call that fails: PreToolUse, the command, PostToolUseFailure.
fn call_failing(project: &Path, id: &str, command: &str) -> Value {
    let before = pre(project, id, command);
    assert!(
        !String::from_utf8_lossy(&before.stdout).contains("\"deny\""),
        "the guard denied {command:?}: {}",
        String::from_utf8_lossy(&before.stdout)
    );
    let ran = run(project, command);
    assert!(!ran.status.success(), "{command} must fail");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    post_failure(project, id, command, &text)
}

/// A tampering command or a push that ends in a failure is checked as any
/// other: Claude Code sends PostToolUseFailure for it, not PostToolUse.
#[test]
fn a_failing_command_is_checked_like_any_other() {
    let dir = supervised("effects-failing");
    let project = dir.path();
    let output = call_failing(
        project,
        "toolu_f1",
        "python3 -c \"open('.lsp.json','w').write('{}1')\"; false",
    );
    assert_eq!(
        output["hookSpecificOutput"]["hookEventName"], "PostToolUseFailure",
        "{output}"
    );
    assert!(output.get("decision").is_none(), "context only: {output}");
    assert!(
        context(&output).contains(".lsp.json (changed, put back)"),
        "{output}"
    );
    assert_intact(project, "after a failing command");

    let dir = supervised("effects-failing-push");
    let project = dir.path();
    with_remote(project);
    let output = call_failing(
        project,
        "toolu_f2",
        "echo 'git push -q origin HEAD:main' > p.sh && sh p.sh && exit 3",
    );
    assert!(message(&output).contains("pushed main"), "{output}");
    assert_eq!(loop_status(project), "PAUSED");
}

fn hook(project: &Path, binary: &str, input: Value) -> Value {
    let ran = util::run_with_stdin(
        util::command(binary, project),
        &serde_json::to_vec(&input).unwrap(),
    );
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{binary}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    serde_json::from_slice(&ran.stdout).unwrap_or(Value::Null)
}

fn stop_input(project: &Path, last: &str) -> Value {
    json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
           "stop_hook_active": false, "last_assistant_message": last,
           "background_tasks": []})
}

/// A post hook killed before it finished (or never run) is made up for at
/// the next hook of any kind, before that hook decides anything.
#[test]
fn a_check_whose_hook_never_ran_is_made_up_at_the_next_hook() {
    let tamper =
        "python3 -c \"open('.claude/settings.json','w').write('{\\\"disableAllHooks\\\": true}')\"";
    for next in [
        "PreToolUse",
        "Stop",
        "UserPromptSubmit",
        "SessionStart",
        "PostToolUse",
    ] {
        let dir = supervised("effects-made-up");
        let project = dir.path();
        assert!(
            !String::from_utf8_lossy(&pre(project, "toolu_m1", tamper).stdout).contains("deny")
        );
        run(project, tamper);
        // No post hook for toolu_m1.
        let output = match next {
            "PreToolUse" => {
                let ran = pre(project, "toolu_m2", "ls");
                serde_json::from_slice(&ran.stdout).unwrap_or(Value::Null)
            }
            // Another call's PostToolUse (its PreToolUse would have made
            // the check up already).
            "PostToolUse" => serde_json::from_slice(&post(project, "toolu_m2", "ls", "").stdout)
                .unwrap_or(Value::Null),
            "Stop" => hook(
                project,
                "ralph-stop-loop-controller",
                stop_input(project, "all done"),
            ),
            "UserPromptSubmit" => hook(
                project,
                "ralph-user-prompt-submit",
                json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                       "cwd": project, "prompt": "how is it going?"}),
            ),
            _ => hook(
                project,
                "ralph-session-start",
                json!({"hook_event_name": "SessionStart", "session_id": SESSION,
                       "cwd": project, "source": "resume"}),
            ),
        };
        assert_eq!(
            read(project.join(".claude/settings.json")),
            SETTINGS,
            "{next}: put back"
        );
        assert!(
            message(&output).contains("settings.json (changed, put back)"),
            "{next}: the user is told: {output}"
        );
        if next == "Stop" {
            assert_eq!(
                output["decision"], "block",
                "the loop still holds: {output}"
            );
            assert!(
                output["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("settings.json"),
                "Claude is told in the reason: {output}"
            );
        }
        assert_intact(project, next);
    }
}

// Issue 31, class 2: the loop is judged by its identity and terms.

/// `loop cancel` and `loop start` of an easy loop in one script — with
/// `CLAUDECODE` removed so the writes look like the user's — leaves the
/// status RUNNING; the loop is put back all the same, and its archive goes.
/// When the check after never ran, the next Stop judges the old loop, not
/// the easy one.
#[test]
fn a_loop_replaced_by_an_easy_one_is_put_back() {
    let swap = "printf 'ralph-hooks loop cancel\\nralph-hooks loop start \"say hi\" --promise HI\\n' > swap.sh && env -u CLAUDECODE sh swap.sh";
    let dir = supervised("effects-loop-swap");
    let project = dir.path();
    let (output, ran) = call(project, "toolu_s1", swap);
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("say hi"),
        "the easy loop was started: {ran:?}"
    );
    let state: Value =
        serde_json::from_str(&read(project.join(".claude/orchestrator/loop.json"))).unwrap();
    assert_eq!(state["id"], "loop-20261121T110000Z-0001", "{state}");
    assert_eq!(state["goal"], "make the test suite pass");
    assert_eq!(state["status"], "RUNNING");
    assert!(
        context(&output).contains("replaced by another loop"),
        "{output}"
    );
    assert!(
        message(&output).contains("from your own terminal"),
        "{output}"
    );
    assert!(
        !project
            .join(".claude/orchestrator/loops/loop-20261121T110000Z-0001.json")
            .exists(),
        "the cancelled loop's archive is undone"
    );

    // The same with the check after never run: the Stop makes it up.
    let dir = supervised("effects-loop-swap-stop");
    let project = dir.path();
    assert!(!String::from_utf8_lossy(&pre(project, "toolu_s2", swap).stdout).contains("deny"));
    run(project, swap);
    let output = hook(
        project,
        "ralph-stop-loop-controller",
        stop_input(project, "<promise>HI</promise>"),
    );
    assert_eq!(output["decision"], "block", "{output}");
    assert_eq!(loop_status(project), "RUNNING");
    let state: Value =
        serde_json::from_str(&read(project.join(".claude/orchestrator/loop.json"))).unwrap();
    assert_eq!(state["goal"], "make the test suite pass", "{state}");
}

// Issue 31, class 3: pushes that move no remote-tracking ref.

/// A tag push, a push past a fetch refspec that tracks nothing, and a push
/// to a URL that is no named remote are each seen and pause the loop.
#[test]
fn tag_pushes_and_pushes_past_a_changed_refspec_are_seen() {
    for (label, command, expected) in [
        (
            "tag",
            "git tag v1 && echo 'git push -q origin v1' > t.sh && sh t.sh",
            "tag v1 → origin",
        ),
        (
            "all tags",
            "git tag v2 && echo 'git push -q --tags origin' > t.sh && sh t.sh 2>/dev/null",
            "tag v2 → origin",
        ),
        (
            "changed refspec",
            "git config remote.origin.fetch '+refs/heads/none:refs/remotes/origin/none' && echo 'git push -q origin HEAD:main' > p.sh && sh p.sh",
            "main → origin",
        ),
        (
            "a URL, in git's report",
            "echo \"git push \\\"$REMOTE\\\" HEAD:refs/heads/feature 2>&1\" > p.sh && sh p.sh",
            "feature → ",
        ),
    ] {
        let dir = supervised("effects-tag-push");
        let project = dir.path();
        let remote = with_remote(project);
        let command = command.replace("$REMOTE", &remote.display().to_string());
        let (output, ran) = call(project, "toolu_t", &command);
        assert!(ran.status.success(), "{label}: {ran:?}");
        let told = message(&output);
        assert!(told.contains(expected), "{label}: {output}");
        assert!(told.contains("cannot be undone"), "{label}: {told}");
        assert_eq!(loop_status(project), "PAUSED", "{label}");
        let _ = std::fs::remove_dir_all(&remote);
    }
    // A commit and a fetch are no push, with a remote on this machine.
    let dir = supervised("effects-tag-push-none");
    let project = dir.path();
    let remote = with_remote(project);
    let (output, _) = call(
        project,
        "toolu_n",
        "git tag v3 && git commit -qm again --allow-empty && git fetch -q origin",
    );
    assert!(!message(&output).contains("pushed"), "{output}");
    assert_eq!(loop_status(project), "RUNNING");
    let _ = std::fs::remove_dir_all(&remote);
}

// Issue 31, class 8: control characters in messages.

/// A file named with a newline and an ESC sequence reaches no message raw:
/// not the put-back report, not a denial.
#[test]
fn file_names_in_messages_are_escaped() {
    let dir = supervised("effects-escape");
    let project = dir.path();
    let command = "python3 -c \"open('.claude/orchestrator/x\\nloop.json (changed, put back)\\x1b[2J','w').write('1')\"";
    let (output, _) = call(project, "toolu_e1", command);
    let told = message(&output);
    let said = context(&output);
    for text in [&told, &said] {
        assert!(!text.contains('\u{1b}'), "raw ESC: {text:?}");
        assert!(text.contains("\\u{1b}[2J"), "escaped: {text:?}");
        assert!(text.contains("x\\nloop.json"), "escaped newline: {text:?}");
    }
    assert_eq!(told.lines().count(), 1, "one line for the user: {told:?}");
    // A denial naming such a path.
    let denied = util::run_with_stdin(
        util::command("ralph-pre-tool-stop-guard", project),
        &serde_json::to_vec(&json!({
            "hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
            "tool_name": "Write", "tool_use_id": "toolu_e2",
            "tool_input": {"file_path": project.join(".claude/orchestrator/y\n\u{1b}[31mred"),
                           "content": "x"},
        }))
        .unwrap(),
    );
    let text = String::from_utf8_lossy(&denied.stdout).into_owned();
    assert!(text.contains("\"deny\""), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    let reason = value["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        !reason.contains('\u{1b}') && !reason.contains('\n'),
        "{reason:?}"
    );
}

/// A small tmpfs mounted over a folder (its content copied in), unmounted
/// on drop; `None` (saying why) where mounting is not permitted, unless
/// `RALPH_HOOKS_REQUIRE_SERVERS=1`.
struct SmallDisk {
    at: PathBuf,
}

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> Option<SmallDisk> {
        let saved = at.with_extension("before-mount");
        std::fs::rename(at, &saved).unwrap();
        std::fs::create_dir(at).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output();
        let ok = mounted.as_ref().is_ok_and(|o| o.status.success());
        if !ok {
            let why = match &mounted {
                Ok(output) => String::from_utf8_lossy(&output.stderr).trim().to_string(),
                Err(error) => error.to_string(),
            };
            std::fs::remove_dir(at).unwrap();
            std::fs::rename(&saved, at).unwrap();
            if util::servers_required() {
                panic!(
                    "a small filesystem is required (RALPH_HOOKS_REQUIRE_SERVERS=1): mount: {why}"
                );
            }
            util::skip(
                "the full-disk test",
                &format!("cannot mount a tmpfs ({why})"),
            );
            return None;
        }
        util::copy_tree(&saved, at);
        std::fs::remove_dir_all(&saved).unwrap();
        Some(SmallDisk {
            at: at.to_path_buf(),
        })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
    }
}

// See: issue 31, "What was seen" 6: a command that deletes the state and
// then fills the disk left the put-back failing, never retried. The copy
// is kept, every later hook tries again, Claude and the user are told, and
// the loop comes back once there is space.
#[test]
fn a_put_back_that_fails_on_a_full_disk_is_retried_at_every_hook() {
    let dir = supervised("effects-disk-full");
    let project = dir.path();
    let Some(_disk) = SmallDisk::mount(&project.join(".claude"), "256k") else {
        return;
    };
    let loop_file = project.join(".claude/orchestrator/loop.json");
    let before = read(loop_file.clone());
    let (output, _) = call(
        project,
        "toolu_fill",
        "python3 -c \"import os; os.remove('.claude/orchestrator/loop.json')\"; head -c 10M /dev/zero > .claude/filler || true",
    );
    let said = message(&output);
    assert!(
        said.contains("loop.json (deleted, could NOT be put back"),
        "{said}"
    );
    // The context Claude gets must not say the opposite (attack F7).
    let told = context(&output);
    assert!(!told.contains("They were restored"), "{told}");
    assert!(told.contains("NOT put back"), "{told}");
    assert!(!loop_file.exists());
    // Still full: a Stop is not let through while the loop's state is
    // missing, and says why.
    let stop = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
               "stop_hook_active": false, "last_assistant_message": "all done"})
        .to_string()
        .as_bytes(),
    );
    let stopped: Value = serde_json::from_slice(&stop.stdout).unwrap_or(Value::Null);
    assert_eq!(
        stopped["decision"],
        "block",
        "{}",
        String::from_utf8_lossy(&stop.stdout)
    );
    assert!(
        stopped["reason"]
            .as_str()
            .unwrap()
            .contains("could NOT be put back"),
        "{stopped}"
    );
    // Space again: the next hook of any kind puts the loop back.
    std::fs::remove_file(project.join(".claude/filler")).unwrap();
    let prompt = util::run_with_stdin(
        util::command("ralph-user-prompt-submit", project),
        json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "cwd": project,
               "prompt": "how is it going?", "source": "user"})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(prompt.status.code(), Some(0));
    let told: Value = serde_json::from_slice(&prompt.stdout).unwrap_or(Value::Null);
    assert!(message(&told).contains("put back at last"), "{told}");
    assert_eq!(read(loop_file), before);
    assert_eq!(loop_status(project), "RUNNING");
    assert!(!watch_dir(project).join("pending.json").exists());
}

fn write_tool_post(project: &Path) -> Output {
    let input = json!({
        "hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": project,
        "tool_name": "Write", "tool_use_id": "toolu_write",
        "tool_input": {"file_path": project.join("src/app.txt"), "content": "two\n"},
        "tool_response": {"type": "update", "filePath": project.join("src/app.txt")},
    });
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/app.txt"), "two\n").unwrap();
    util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", project),
        &serde_json::to_vec(&input).unwrap(),
    )
}

/// Lets the background process of [`LATE_WRITER`] do its round `n` and
/// waits until it did (a generous deadline, not a timing assertion).
fn let_late_writer_write(project: &Path, n: u32) {
    std::fs::write(project.join(format!(".go{n}")), "").unwrap();
    let done = project.join(format!(".done{n}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background writer never wrote"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Held (shared) by the tests whose calls must leave no process running
/// behind them, and (alone) while [`LATE_WRITER`] is started: the check after
/// a call counts any orphan born during it, another test's included.
static NOTHING_LEFT_RUNNING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A detached process that outlives its Bash call and, each time it is let
/// (`.go1`, `.go2`), overwrites loop.json with `{}` and turns every hook off
/// in settings.local.json — spelled so that no text rule sees it, as in the
/// attack. It gives up waiting after a minute, so a failed test leaves no
/// process behind for long.
const LATE_WRITER: &str = r#"setsid sh -c 'for n in 1 2; do i=0; while [ ! -e .go$n ] && [ $i -lt 3000 ]; do i=$((i+1)); sleep 0.02; done; python3 -c "
s = \".cl\" + \"aude/\"
open(s + \"orch\" + \"estrator/loop.json\", \"w\").write(\"{}\")
open(s + \"settings.lo\" + \"cal.json\", \"w\").write(\"{\\\"disableAllHooks\\\": true}\")"; touch .done$n; done' > /dev/null 2>&1 < /dev/null & echo started"#;

// See: attack findings F5/F5b: a write that lands after the Bash call's
// check (a detached `setsid sh -c 'sleep 2; …'`) was never put back:
// loop.json overwritten with `{}` was moved aside as corrupt by the next
// reader, and a late `disableAllHooks` in settings.local.json stayed.
#[test]
fn a_write_that_lands_after_the_check_is_put_back_with_no_hook_running() {
    let dir = supervised("effects-late-write");
    let project = dir.path();
    let loop_file = project.join(".claude/orchestrator/loop.json");
    let local = project.join(".claude/settings.local.json");
    let before = read(loop_file.clone());
    let (output, _) = {
        // Its process is an orphan born in the window of any call beside
        // it: the tests that need none left running wait.
        let _alone = NOTHING_LEFT_RUNNING
            .write()
            .unwrap_or_else(|e| e.into_inner());
        call(project, "toolu_bg", LATE_WRITER)
    };
    assert_eq!(output, Value::Null, "nothing changed yet: silent");

    // The writes land after the check, while no Bash call is open. The
    // guard's watcher puts them back with no hook running (Claude Code
    // re-reads its settings a second after a write: attack finding
    // A35-5); the next hook, a Write tool's, tells what it did.
    let_late_writer_write(project, 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while local.exists() || read(loop_file.clone()) != before {
        assert!(
            std::time::Instant::now() < deadline,
            "no hook ran, and the late writes were not put back"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let written = write_tool_post(project);
    assert_eq!(
        written.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    assert_eq!(read(loop_file.clone()), before, "loop.json put back");
    assert!(!local.exists(), "the late settings file is undone");
    let corrupt = std::fs::read_dir(project.join(".claude/orchestrator"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(!corrupt, "not moved aside as corrupt");
    let said = String::from_utf8_lossy(&written.stdout).into_owned();
    assert!(said.contains("were put back"), "{said}");
    assert_eq!(loop_status(project), "RUNNING");

    // Again, with a Stop as the next hook: the loop's state is back before
    // it is read, and the stop is blocked.
    let_late_writer_write(project, 2);
    let stop = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
               "stop_hook_active": false, "last_assistant_message": "All done."})
        .to_string()
        .as_bytes(),
    );
    let stopped: Value = serde_json::from_slice(&stop.stdout).unwrap_or(Value::Null);
    assert_eq!(
        stopped["decision"],
        "block",
        "{}",
        String::from_utf8_lossy(&stop.stdout)
    );
    assert!(!local.exists());
    assert_eq!(loop_status(project), "RUNNING");
    let state: Value = serde_json::from_str(&read(loop_file)).unwrap();
    assert_eq!(state["id"], "loop-20261121T110000Z-0001", "the same loop");
    assert_eq!(state["iteration"], 3, "judged on its own state: one more");
}

/// With no process left behind by the agent's calls, a change between
/// hooks is someone else's (the user's, from a terminal): it stands, even
/// while the loop runs.
#[test]
fn a_change_between_hooks_with_nothing_left_running_stands() {
    let _quiet = NOTHING_LEFT_RUNNING
        .read()
        .unwrap_or_else(|e| e.into_inner());
    let dir = supervised("effects-late-none");
    let project = dir.path();
    let (output, _) = call(project, "toolu_1", "echo quick");
    assert_eq!(output, Value::Null);
    assert!(
        !watch_dir(project).join("background.json").exists(),
        "nothing left running"
    );
    let local = project.join(".claude/settings.local.json");
    std::fs::write(&local, "{\"env\": {}}").unwrap();
    let written = write_tool_post(project);
    assert_eq!(written.status.code(), Some(0));
    assert_eq!(read(local), "{\"env\": {}}");
}

// See: issue 31, item "disk full", and the hooks of a new session: a put-back
// that failed for lack of space is tried again when a session starts.
#[test]
fn a_pending_put_back_is_retried_when_a_session_starts() {
    let dir = supervised("effects-disk-full-start");
    let project = dir.path();
    let Some(_disk) = SmallDisk::mount(&project.join(".claude"), "256k") else {
        return;
    };
    let loop_file = project.join(".claude/orchestrator/loop.json");
    let before = read(loop_file.clone());
    let (output, _) = call(
        project,
        "toolu_fill",
        "python3 -c \"import os; os.remove('.claude/orchestrator/loop.json')\"; head -c 10M /dev/zero > .claude/filler || true",
    );
    assert!(
        message(&output).contains("could NOT be put back"),
        "{output}"
    );
    assert!(!loop_file.exists());
    std::fs::remove_file(project.join(".claude/filler")).unwrap();
    // `claude --continue` after the last session ended on the full disk.
    let start = util::run_with_stdin(
        util::command("ralph-session-start", project),
        json!({"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": project,
               "source": "resume"})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(
        start.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    let said = String::from_utf8_lossy(&start.stdout).into_owned();
    assert!(said.contains("put back at last"), "{said}");
    assert_eq!(read(loop_file), before);
    assert_eq!(loop_status(project), "RUNNING");
    assert!(!watch_dir(project).join("pending.json").exists());
}

// See: attack finding F9: the empty files Claude Code's sandbox creates on
// the host to mask absent protected paths were reported as the agent's
// tampering ("created, put back") and moved aside into the project.
#[test]
fn an_empty_placeholder_for_an_absent_protected_file_is_no_change() {
    let dir = supervised("effects-placeholder");
    let project = dir.path();
    let local = project.join(".claude/settings.local.json");
    assert!(!local.exists());
    // What bubblewrap leaves on the host: an empty, read-only file.
    let (output, _) = call(
        project,
        "toolu_ph",
        "python3 -c \"import os; p='.cl'+'aude/settings.lo'+'cal.json'; open(p,'w').close(); os.chmod(p, 0o444)\"",
    );
    assert_eq!(output, Value::Null, "nothing to say: {output}");
    let aside = std::fs::read_dir(project.join(".claude"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .contains("undone-by-ralph-hooks")
        });
    assert!(!aside, "nothing moved aside");
    // Claude Code removes it after the sandbox is gone.
    let (output, _) = call(
        project,
        "toolu_ph2",
        "python3 -c \"import os; os.remove('.cl'+'aude/settings.lo'+'cal.json')\"",
    );
    assert_eq!(output, Value::Null, "{output}");
    assert!(!local.exists(), "not put back either");
    // A file with content in its place is still tampering.
    let (output, _) = call(
        project,
        "toolu_ph3",
        "python3 -c \"open('.cl'+'aude/settings.lo'+'cal.json','w').write('{\\\"disableAllHooks\\\": true}')\"",
    );
    assert!(message(&output).contains("settings.local.json"), "{output}");
    assert!(!local.exists());
}

// See: attack finding A35-3: the project folder itself moved away and a
// link to an empty folder put in its place; the hooks followed the link,
// found no loop, and "All done." went through.
#[test]
fn a_project_folder_swapped_for_a_link_is_put_back() {
    let dir = supervised("swap-project");
    let project = dir.path();
    let empty = TempDir::new("swap-project-empty");
    let old = project.with_extension("moved");
    let command = format!(
        "python3 -c \"import os; p=os.getcwd(); os.chdir('/'); os.rename(p, '{}'); os.symlink('{}', p)\"",
        old.display(),
        empty.path().display()
    );
    let (after, _) = call(project, "toolu_swap", &command);
    let kind = std::fs::symlink_metadata(project).unwrap().file_type();
    let siblings: Vec<PathBuf> = std::fs::read_dir(project.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path != project
                && path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&*project.file_name().unwrap().to_string_lossy())
        })
        .collect();
    let status = std::fs::read_to_string(project.join(".claude/orchestrator/loop.json"));
    for sibling in &siblings {
        if std::fs::symlink_metadata(sibling).is_ok_and(|m| m.is_symlink()) {
            let _ = std::fs::remove_file(sibling);
        } else {
            let _ = std::fs::remove_dir_all(sibling);
        }
    }
    assert!(kind.is_dir(), "the link stayed in the project's place");
    let status: Value = serde_json::from_str(&status.unwrap()).unwrap();
    assert_eq!(status["status"], "RUNNING");
    assert!(context(&after).contains("put back"), "{after}");
}

// See: re-attack finding RA-2: the project's parent folder moved away and a
// link to an empty folder put in its place; the guard's records were kept
// by the resolved path, so the check found none and let the loop go.
#[test]
fn a_parent_folder_swapped_for_a_link_is_put_back() {
    let outer = TempDir::new("swap-parent");
    let project = outer.path().join("parent/proj");
    std::fs::create_dir_all(&project).unwrap();
    supervise(&project);
    let empty = outer.path().join("empty");
    std::fs::create_dir_all(empty.join("proj")).unwrap();
    let command = format!(
        "python3 -c \"import os; q=os.path.dirname(os.getcwd()); os.chdir('/'); os.rename(q, q + '-old'); os.symlink('{}', q)\"",
        empty.display()
    );
    let (after, _) = call(&project, "toolu_swap_parent", &command);
    let parent = outer.path().join("parent");
    assert!(
        std::fs::symlink_metadata(&parent).unwrap().is_dir(),
        "the link stayed in the parent's place"
    );
    assert_eq!(loop_status(&project), "RUNNING");
    assert!(context(&after).contains("put back"), "{after}");
}

// See: guard attack W-7: a file made in a protected folder is moved aside
// as `<name>.undone-by-ralph-hooks-<time>`, which is itself a new file in
// that folder: each later check moved it aside again until the name was
// too long. What the guard moved aside stays where it put it.
#[test]
fn a_file_moved_aside_is_not_moved_aside_again() {
    let dir = supervised("effects-aside-once");
    let project = dir.path();
    // A protected folder outside the project, as the managed settings
    // folder is (the attack's case).
    let outside = TempDir::new("effects-aside-once-outside");
    let skills = outside.path().join("locked");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        project.join(".claude/ralph-hooks.json"),
        json!({"guard": {"state_files": true, "protected": [format!("{}/", skills.display())]}})
            .to_string(),
    )
    .unwrap();
    // Written late, by a process the call left running: put back by the
    // watcher, then the hooks after it look again.
    let (_, _) = {
        let _alone = NOTHING_LEFT_RUNNING
            .write()
            .unwrap_or_else(|e| e.into_inner());
        call(
            project,
            "toolu_skill",
            &format!(
                "setsid sh -c 'sleep 1; python3 -c \"open(\\\"{}\\\"+\\\"/x.md\\\",\\\"w\\\").write(\\\"hi\\\")\"; sleep 3' > /dev/null 2>&1 < /dev/null &",
                skills.display()
            ),
        )
    };
    std::thread::sleep(std::time::Duration::from_millis(2500));
    for n in 0..3 {
        write_tool_post(project);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let _ = n;
    }
    let names: Vec<String> = std::fs::read_dir(&skills)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(
        names[0].matches("undone-by-ralph-hooks").count(),
        1,
        "{names:?}"
    );
}

// See: guard attack W-3: the process a call left running handed its work
// to a fresh one (a double fork) and ended; with none noted alive the
// watcher ended, and the fresh process's late `disableAllHooks` stood.
#[test]
fn a_late_write_handed_to_a_fresh_process_is_put_back() {
    late_write_handed_off(
        "effects-late-handoff",
        r#"setsid sh -c 'sleep 1; setsid sh -c "sleep 2; python3 -c \"open(\\\".cl\\\"+\\\"aude/settings.lo\\\"+\\\"cal.json\\\",\\\"w\\\").write(\\\"{\\\\\\\"disableAllHooks\\\\\\\": true}\\\")\"; touch .handed" > /dev/null 2>&1 < /dev/null & exit 0' > /dev/null 2>&1 < /dev/null &"#,
    );
}

// See: re-attack X-1: the handoff landed while something else made the
// watcher look (there, the call's post-tool hook writing the state): that
// look forgot the process that had just ended before the watcher adopted
// its heir, the watcher ended, and the heir's late write stood. (The
// handoff falls between the watcher's half-second looks.)
#[test]
fn a_handoff_right_before_the_watcher_looks_is_still_noted() {
    late_write_handed_off(
        "effects-late-handoff-look",
        r#"setsid sh -c 'sleep 1.25; setsid sh -c "sleep 0.02; touch .claude/notes.txt; sleep 2; python3 -c \"open(\\\".cl\\\"+\\\"aude/settings.lo\\\"+\\\"cal.json\\\",\\\"w\\\").write(\\\"{\\\\\\\"disableAllHooks\\\\\\\": true}\\\")\"; touch .handed" > /dev/null 2>&1 < /dev/null & exit 0' > /dev/null 2>&1 < /dev/null &"#,
    );
}

// See: the late write landed in two steps, the file created empty and
// filled 0.8 s later; the watcher's look between the two took the empty
// file (no change) for the new base, and put the filled one back to it:
// an empty settings file stood where there had been none.
#[test]
fn a_late_write_seen_half_done_is_put_back_to_what_was_there() {
    late_write_handed_off(
        "effects-late-two-steps",
        r#"setsid sh -c 'sleep 1; setsid sh -c "sleep 1; python3 -c \"import time; f=open(\\\".cl\\\"+\\\"aude/settings.lo\\\"+\\\"cal.json\\\",\\\"w\\\"); f.flush(); time.sleep(0.8); f.write(\\\"{\\\\\\\"disableAllHooks\\\\\\\": true}\\\"); f.close()\"; touch .handed" > /dev/null 2>&1 < /dev/null & exit 0' > /dev/null 2>&1 < /dev/null &"#,
    );
}

/// Runs `command` as a Bash call that leaves a process behind which hands
/// its late write of `disableAllHooks` to a fresh process (that then
/// touches `.handed`); the write must be put back with no hook running.
fn late_write_handed_off(label: &str, command: &str) {
    let dir = supervised(label);
    let project = dir.path();
    let local = project.join(".claude/settings.local.json");
    {
        let _alone = NOTHING_LEFT_RUNNING
            .write()
            .unwrap_or_else(|e| e.into_inner());
        call(project, "toolu_handoff", command);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !project.join(".handed").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: the fresh process never wrote"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while local.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no hook ran, and the handed-off late write was not put back"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
