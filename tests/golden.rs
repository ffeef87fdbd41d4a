//! Golden tests: every case under `fixtures/golden/<binary>/<case>/` runs the
//! real binary on a fresh project and compares what it printed and what it
//! left on disk.
//!
//! A case folder holds:
//! - `input.json` (stdin; `{{PROJECT}}`, `{{STATE}}` and `{{PROJECT_HASH}}`,
//!   seed 001's `md5(project)[:8]`, are substituted here, in every expected
//!   file, in copied fixture files, and in their path names) or
//!   `input.bin` (raw bytes, for the bad-input table);
//! - `state/`, copied to the state root, and `project/`, copied to the project
//!   (in both, `{{PROJECT}}` and `{{STATE}}` are substituted; in project
//!   files also `{{FAKE_LSP}}`, the fake language server's path);
//! - `expected.json`: stdout as JSON, with `"[..]"` wildcards; without it
//!   stdout must be empty (or match `expected.stdout`, text with `[..]`);
//! - `expected-state/`: files the state root must then hold (JSON compared
//!   with wildcards, `.jsonl` line by line, anything else as text);
//!   `expected-project/` the same for the project (`{{BIN_DIR}}` is the
//!   folder of the built binaries, as installed files name it);
//! - `case.json` (optional): `args`, `env`, `exit` (default 0), `stderr`
//!   (whole stderr, `[..]` wildcards), `before` (a shell command run in the
//!   project first), `git` (make the project a git repo), `state_glob` (names
//!   with `*` that must exist in the state root), `state_absent`, and
//!   `state_untouched` (the state root must not exist afterwards);
//! - or `steps/NN/` folders, each a case of its own run in order on the same
//!   project.
//!
//! `fixtures/golden/<harness>/<binary>/<case>/` holds the same for another
//! agent harness (codex, gemini, cursor, copilot): payloads as its
//! documentation gives them, answers in its format.
//!
//! `BLESS=1` rewrites `expected.json` and existing `expected-state/` files
//! from what the binaries did. Every mismatch of every case is reported before
//! the test fails.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{self, TempDir};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("golden")
}

#[test]
fn golden_cases() {
    let root = fixtures_root();
    let filter = std::env::var("GOLDEN_FILTER").ok();
    let mut failures = Vec::new();
    let mut n_cases = 0;
    for (prefix, binary_dir) in binary_dirs(&root) {
        let binary = binary_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for case_dir in sorted_dirs(&binary_dir) {
            let name = format!(
                "{prefix}{binary}/{}",
                case_dir.file_name().unwrap().to_string_lossy()
            );
            if filter.as_deref().is_some_and(|f| !name.contains(f)) {
                continue;
            }
            n_cases += 1;
            let problems = run_case(&binary, &case_dir);
            if !problems.is_empty() {
                failures.push(format!("{name}:\n  {}", problems.join("\n  ")));
            }
        }
    }
    assert!(
        n_cases > 0,
        "no golden cases found under {}",
        root.display()
    );
    eprintln!("golden: {n_cases} cases, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "golden mismatches (BLESS=1 rewrites expectations):\n\n{}",
        failures.join("\n\n")
    );
}

/// The folders named after a binary: `fixtures/golden/<binary>/`, and
/// `fixtures/golden/<harness>/<binary>/` for another agent harness's
/// payloads (its cases pass `--harness <name>` in `case.json`).
fn binary_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut dirs = Vec::new();
    for dir in sorted_dirs(root) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if ralph_hooks::harness::Harness::parse(&name).is_some() {
            for binary_dir in sorted_dirs(&dir) {
                dirs.push((format!("{name}/"), binary_dir));
            }
        } else {
            dirs.push((String::new(), dir));
        }
    }
    dirs
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Project files may name the paths and the fake language server
/// (`{{FAKE_LSP}}`, for `.lsp.json`); only files holding a placeholder are
/// rewritten.
fn substitute_project_files(project: &Path, state: &Path) {
    let mut vars = golden_vars(project, state);
    vars.push(("FAKE_LSP", String::new()));
    for file in util::files_under(project) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !text.contains("{{") {
            continue;
        }
        // Building the fake server is only worth it for files that name it.
        if text.contains("{{FAKE_LSP}}") && vars.last().is_some_and(|(_, path)| path.is_empty()) {
            vars.pop();
            vars.push(("FAKE_LSP", util::fake_lsp_server().display().to_string()));
        }
        std::fs::write(&file, util::substitute(&text, &vars)).unwrap();
    }
}

/// The placeholders every fixture file may use: `{{PROJECT}}`, `{{STATE}}`
/// and `{{PROJECT_HASH}}` (seed 001's `md5(project_root)[:8]`, which names
/// the orchestrator's `sessions/` and `knowledge/` folders).
fn golden_vars(project: &Path, state: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("PROJECT", project.display().to_string()),
        ("STATE", state.display().to_string()),
        (
            "PROJECT_HASH",
            ralph_hooks::orchestrator::schema::md5::project_hash(project),
        ),
        (
            "BIN_DIR",
            util::bin("ralph-hooks")
                .parent()
                .unwrap()
                .display()
                .to_string(),
        ),
    ]
}

/// Renames every file or folder below `dir` named `{{PROJECT_HASH}}` to the
/// project's hash, so fixtures can lay out `sessions/{{PROJECT_HASH}}/`.
fn substitute_path_names(dir: &Path, vars: &[(&str, String)]) {
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let mut path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains("{{") {
            let renamed = path.with_file_name(util::substitute(&name, vars));
            std::fs::rename(&path, &renamed).unwrap();
            path = renamed;
        }
        if path.is_dir() {
            substitute_path_names(&path, vars);
        }
    }
}

/// Runs one case (and its steps); returns every mismatch found.
fn run_case(binary: &str, case_dir: &Path) -> Vec<String> {
    let temp = TempDir::new("golden");
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let state = project.join(".claude").join("orchestrator");
    if case_dir.join("project").is_dir() {
        util::copy_tree(&case_dir.join("project"), &project);
        substitute_path_names(&project, &golden_vars(&project, &state));
        substitute_project_files(&project, &state);
    }
    if case_dir.join("state").is_dir() {
        util::copy_tree(&case_dir.join("state"), &state);
        let vars = golden_vars(&project, &state);
        substitute_path_names(&state, &vars);
        for file in util::files_under(&state) {
            if let Ok(text) = std::fs::read_to_string(&file) {
                std::fs::write(&file, util::substitute(&text, &vars)).unwrap();
            }
        }
    }
    let steps_dir = case_dir.join("steps");
    let steps = if steps_dir.is_dir() {
        sorted_dirs(&steps_dir)
    } else {
        vec![case_dir.to_path_buf()]
    };
    let mut problems = Vec::new();
    for step in steps {
        let label = step
            .strip_prefix(case_dir)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        for problem in run_step(binary, &step, &project, &state) {
            problems.push(if label.is_empty() {
                problem
            } else {
                format!("[{label}] {problem}")
            });
        }
    }
    problems
}

fn run_step(binary: &str, step: &Path, project: &Path, state: &Path) -> Vec<String> {
    let case: Value = read_json(&step.join("case.json")).unwrap_or(Value::Null);
    let vars = golden_vars(project, state);
    let mut problems = Vec::new();

    if case["git"].as_bool() == Some(true) && !project.join(".git").exists() {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("git init -q && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m init")
            .current_dir(project)
            .status()
            .unwrap();
        assert!(status.success(), "git init failed");
    }
    if let Some(before) = case["before"].as_str() {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(before)
            .current_dir(project)
            .status()
            .unwrap();
        if !status.success() {
            problems.push(format!("`before` command failed: {before}"));
        }
    }

    let stdin = if step.join("input.bin").exists() {
        std::fs::read(step.join("input.bin")).unwrap()
    } else if step.join("input.json").exists() {
        util::substitute(
            &std::fs::read_to_string(step.join("input.json")).unwrap(),
            &vars,
        )
        .into_bytes()
    } else {
        Vec::new()
    };
    let mut command = util::command(binary, project);
    // The other harnesses name no project in the environment: their hooks
    // find it from the payload, as they must in use.
    let other_harness = case["args"]
        .as_array()
        .is_some_and(|args| args.iter().any(|a| a == "--harness"));
    if other_harness {
        command.env_remove("CLAUDE_PROJECT_DIR");
    }
    if let Some(args) = case["args"].as_array() {
        command.args(
            args.iter()
                .map(|a| util::substitute(a.as_str().unwrap_or_default(), &vars)),
        );
    }
    if let Some(env) = case["env"].as_object() {
        for (key, value) in env {
            command.env(
                key,
                util::substitute(value.as_str().unwrap_or_default(), &vars),
            );
        }
    }
    let output = util::run_with_stdin(command, &stdin);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();

    let want_exit = case["exit"].as_i64().unwrap_or(0) as i32;
    if output.status.code() != Some(want_exit) {
        problems.push(format!(
            "exit {:?}, expected {want_exit}; stderr: {}",
            output.status.code(),
            stderr.trim()
        ));
    }
    if let Some(pattern) = case["stderr"].as_str() {
        let pattern = util::substitute(pattern, &vars);
        if !util::wildcard_match(&pattern, stderr.trim_end()) {
            problems.push(format!(
                "stderr {:?} does not match {pattern:?}",
                stderr.trim_end()
            ));
        }
    }
    if output.status.code() == Some(2) {
        problems.push("exit 2 is never allowed".to_string());
    }

    problems.extend(compare_stdout(step, &stdout, &vars));
    problems.extend(compare_state(step, state, &vars));
    problems.extend(compare_project(step, project, &vars));
    for pattern in case["state_glob"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !glob_exists(state, pattern) {
            problems.push(format!("no state file matches {pattern}"));
        }
    }
    for name in case["state_absent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if state.join(name).exists() {
            problems.push(format!("state file {name} should not exist"));
        }
    }
    if case["state_untouched"].as_bool() == Some(true) && state.exists() {
        problems.push("the state root was created or touched".to_string());
    }
    problems
}

fn compare_stdout(step: &Path, stdout: &str, vars: &[(&str, String)]) -> Vec<String> {
    let bless = std::env::var_os("BLESS").is_some();
    let json_path = step.join("expected.json");
    let text_path = step.join("expected.stdout");
    if text_path.exists() {
        if bless {
            std::fs::write(&text_path, mask_new_loop_ids(&unsubstitute(stdout, vars))).unwrap();
            return vec![];
        }
        let pattern = util::substitute(&std::fs::read_to_string(&text_path).unwrap(), vars);
        if !util::wildcard_match(pattern.trim_end(), stdout.trim_end()) {
            return vec![format!(
                "stdout:\n{stdout}\ndoes not match expected.stdout:\n{pattern}"
            )];
        }
        return vec![];
    }
    if stdout.trim().is_empty() {
        if json_path.exists() {
            return vec!["stdout is empty but expected.json exists".to_string()];
        }
        return vec![];
    }
    let actual: Value = match serde_json::from_str(stdout.trim()) {
        Ok(value) => value,
        Err(error) => return vec![format!("stdout is not one JSON object ({error}): {stdout}")],
    };
    if bless {
        let text = mask_measured_waits(&mask_corrupt_stamps(&unsubstitute(
            &serde_json::to_string_pretty(&actual).unwrap(),
            vars,
        )));
        std::fs::write(&json_path, text + "\n").unwrap();
        return vec![];
    }
    let Some(expected) = read_json(&json_path).map(|v| substitute_json(&v, vars)) else {
        return vec![format!("unexpected stdout (no expected.json): {stdout}")];
    };
    util::json_mismatch(&expected, &actual, "stdout")
        .into_iter()
        .collect()
}

fn compare_state(step: &Path, state: &Path, vars: &[(&str, String)]) -> Vec<String> {
    compare_dir(&step.join("expected-state"), state, vars)
}

/// `expected-project/`: files the project must then hold (as `expected-state/`).
fn compare_project(step: &Path, project: &Path, vars: &[(&str, String)]) -> Vec<String> {
    compare_dir(&step.join("expected-project"), project, vars)
}

fn compare_dir(expected_dir: &Path, state: &Path, vars: &[(&str, String)]) -> Vec<String> {
    let expected_dir = expected_dir.to_path_buf();
    if !expected_dir.is_dir() {
        return vec![];
    }
    let bless = std::env::var_os("BLESS").is_some();
    let mut problems = Vec::new();
    for expected_file in util::files_under(&expected_dir) {
        let relative = expected_file.strip_prefix(&expected_dir).unwrap();
        let actual_file = state.join(relative);
        let Ok(actual_text) = std::fs::read_to_string(&actual_file) else {
            problems.push(format!("state file {} is missing", relative.display()));
            continue;
        };
        if bless {
            std::fs::write(
                &expected_file,
                mask_measured_waits(&unsubstitute(
                    &mask_volatile_text(
                        &actual_text,
                        relative.to_string_lossy().ends_with(".jsonl"),
                    ),
                    vars,
                )),
            )
            .unwrap();
            continue;
        }
        let expected_text =
            util::substitute(&std::fs::read_to_string(&expected_file).unwrap(), vars);
        let name = relative.display().to_string();
        if name.ends_with(".jsonl") {
            let want: Vec<&str> = expected_text.lines().collect();
            let got: Vec<&str> = actual_text.lines().collect();
            if want.len() != got.len() {
                problems.push(format!(
                    "{name}: expected {} lines, got {}:\n{actual_text}",
                    want.len(),
                    got.len()
                ));
                continue;
            }
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                match (
                    serde_json::from_str::<Value>(w),
                    serde_json::from_str::<Value>(g),
                ) {
                    (Ok(w), Ok(g)) => {
                        problems.extend(util::json_mismatch(&w, &g, &format!("{name}:{}", i + 1)))
                    }
                    _ => problems.push(format!("{name}:{}: not JSON", i + 1)),
                }
            }
        } else if name.ends_with(".json") {
            match (
                serde_json::from_str::<Value>(&expected_text),
                serde_json::from_str::<Value>(&actual_text),
            ) {
                (Ok(w), Ok(g)) => problems.extend(util::json_mismatch(&w, &g, &name)),
                _ => problems.push(format!("{name}: not JSON:\n{actual_text}")),
            }
        } else if !util::wildcard_match(expected_text.trim_end(), actual_text.trim_end()) {
            problems.push(format!(
                "{name}: got\n{actual_text}\nexpected\n{expected_text}"
            ));
        }
    }
    problems
}

/// Keys whose values differ on every run (timings, random suffixes); BLESS
/// writes `"[..]"` for them so re-blessing keeps the expectations stable.
const VOLATILE_KEYS: &[&str] = &["duration_ms", "loopId", "id"];

fn mask_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let is_random_loop_id = key != "duration_ms"
                    && item
                        .as_str()
                        .is_some_and(|s| s.starts_with("loop-2") && !s.ends_with("-0001"));
                if VOLATILE_KEYS.contains(&key.as_str())
                    && (key == "duration_ms" || is_random_loop_id)
                {
                    *item = Value::String("[..]".into());
                } else {
                    mask_volatile(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_volatile),
        _ => {}
    }
}

fn mask_volatile_text(text: &str, jsonl: bool) -> String {
    let mask = |line: &str| match serde_json::from_str::<Value>(line) {
        Ok(mut value) => {
            mask_volatile(&mut value);
            Some(value)
        }
        Err(_) => None,
    };
    if !jsonl && let Some(value) = mask(text) {
        return serde_json::to_string_pretty(&value).unwrap() + "\n";
    }
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            mask(line)
                .map(|v| serde_json::to_string(&v).unwrap())
                .unwrap_or_else(|| line.to_string())
        })
        .collect();
    lines.join("\n") + "\n"
}

/// Loop ids made during the run end in a random suffix (`loop-<time>-<hex>`);
/// fixtures' own ids end in `-0001` and stay.
fn mask_new_loop_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("loop-2") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let id_len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(tail.len());
        let id = &tail[..id_len];
        match id.rsplit_once('-') {
            Some((stem, suffix)) if suffix != "0001" => out.push_str(&format!("{stem}-[..]")),
            _ => out.push_str(id),
        }
        rest = &tail[id_len..];
    }
    out.push_str(rest);
    out
}

/// `<name>.corrupt-<UTC timestamp>` names carry the wall-clock time.
/// "no result within 0.7 s" reports how long one phase of a check waited,
/// which depends on the machine's load; only its presence is expected.
fn mask_measured_waits(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("within ") {
        let (head, tail) = rest.split_at(at + "within ".len());
        out.push_str(head);
        let number_len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        if number_len > 0 && tail[number_len..].starts_with(" s") {
            out.push_str("[..]");
            rest = &tail[number_len..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

fn mask_corrupt_stamps(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(".corrupt-") {
        let (head, tail) = rest.split_at(at + ".corrupt-".len());
        out.push_str(head);
        let stamp_len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == 'T' || c == '.'))
            .unwrap_or(tail.len());
        out.push_str("[..]");
        rest = &tail[stamp_len..];
    }
    out.push_str(rest);
    out
}

fn glob_exists(dir: &Path, pattern: &str) -> bool {
    let (dir, pattern) = match pattern.rsplit_once('/') {
        Some((sub, name)) => (dir.join(sub), name.to_string()),
        None => (dir.to_path_buf(), pattern.to_string()),
    };
    let pattern = pattern.replace('*', "[..]");
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .any(|e| util::wildcard_match(&pattern, &e.file_name().to_string_lossy()))
        })
        .unwrap_or(false)
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display())),
    )
}

fn substitute_json(value: &Value, vars: &[(&str, String)]) -> Value {
    match value {
        Value::String(text) => Value::String(util::substitute(text, vars)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute_json(v, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute_json(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn unsubstitute(text: &str, vars: &[(&str, String)]) -> String {
    let mut text = text.to_string();
    for (name, value) in vars {
        text = text.replace(value.as_str(), &format!("{{{{{name}}}}}"));
    }
    text
}
