//! A project check through the checker's own command line, for checkers
//! whose server cannot be asked about a whole project well (see
//! [`BatchCli`]): the command runs over the job's files in the workspace
//! root (so the project's configuration applies), and its JSON becomes the
//! same per-file answers a server gives.
//!
//! In the daemon the result is kept with the size and modification time of
//! every file and configuration file it covered, so a check of an unchanged
//! project is answered from it; a run that outlives its caller finishes in
//! the background and is kept for the next check.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::jobs::{JobAnswer, ServerJob};
use crate::lsp::batch::FileAnswer;
use crate::lsp::servers::BatchCli;
use crate::lsp::{Launch, LspError, ServerDiagnostic, uri};
use crate::util::fsread::{self, Links, limits};
use crate::util::process::GroupChild;
use crate::util::text::fnv1a;

/// The files next to the checked ones whose change changes every answer.
const CONFIG_FILES: &[&str] = &[
    "pyrefly.toml",
    "ty.toml",
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
];

/// A run in the daemon may go on after its caller stopped waiting, for the
/// next check, but not longer than this.
const BACKGROUND_LIMIT: Duration = Duration::from_secs(10 * 60);

/// Runs `cli` for `job` and waits for it until `deadline`, when it is
/// stopped (this process is about to end).
pub fn run(cli: BatchCli, job: &ServerJob, deadline: Instant) -> JobAnswer {
    Started::start(cli, job, deadline).wait(deadline, job.files.len())
}

/// CLI results kept by the daemon, per job (program, root, files).
#[derive(Default)]
pub struct CliCache {
    entries: Mutex<HashMap<u64, Arc<Started>>>,
}

impl CliCache {
    /// The job's answer: kept when nothing it covered changed since, else
    /// from a fresh run (or one still running for this very state).
    pub fn run(&self, cli: BatchCli, job: &ServerJob, deadline: Instant) -> JobAnswer {
        let key = job_key(job);
        let stamps = stamps(job);
        let started = {
            let Ok(mut entries) = self.entries.lock() else {
                return run(cli, job, deadline);
            };
            match entries.get(&key) {
                Some(entry) if entry.stamps == stamps && !entry.failed() => Arc::clone(entry),
                _ => {
                    let fresh = Started::start(cli, job, Instant::now() + BACKGROUND_LIMIT);
                    entries.insert(key, Arc::clone(&fresh));
                    fresh
                }
            }
        };
        started.wait(deadline, job.files.len())
    }

    /// How long the job's last finished run of the command line took.
    pub fn run_time(&self, job: &ServerJob) -> Option<Duration> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(&job_key(job))?;
        let took = entry.took.lock().ok()?;
        *took
    }

    /// Whether a run for the job's files as they are now is kept (or still
    /// going), so [`CliCache::run`] would not start another.
    pub fn is_current(&self, job: &ServerJob) -> bool {
        let stamps = stamps(job);
        self.entries.lock().is_ok_and(|entries| {
            entries
                .get(&job_key(job))
                .is_some_and(|entry| entry.stamps == stamps && !entry.failed())
        })
    }
}

/// What one run of the command line found, per file; or why it failed.
type RunOutcome = Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String>;

/// A run of the command line, possibly still going.
struct Started {
    /// What the run covered, as it was when it started.
    stamps: u64,
    files: Vec<PathBuf>,
    outcome: Mutex<Option<RunOutcome>>,
    done: Condvar,
    started_at: Instant,
    /// How long the run took, once it has succeeded.
    took: Mutex<Option<Duration>>,
}

impl Started {
    /// Starts the command on its own thread, stopped at `until`.
    fn start(cli: BatchCli, job: &ServerJob, until: Instant) -> Arc<Started> {
        let started = Arc::new(Started {
            stamps: stamps(job),
            files: job.files.iter().map(|f| uri::comparable(&f.path)).collect(),
            outcome: Mutex::new(None),
            done: Condvar::new(),
            started_at: Instant::now(),
            took: Mutex::new(None),
        });
        let running = Arc::clone(&started);
        let launch = job.launch.clone();
        let files: Vec<PathBuf> = job.files.iter().map(|f| f.path.clone()).collect();
        let spawned = std::thread::Builder::new()
            .name("batch-cli".into())
            .spawn(move || running.finish(execute(cli, &launch, &files, until)));
        if let Err(error) = spawned {
            started.finish(Err(format!("cannot start a thread: {error}")));
        }
        started
    }

    fn failed(&self) -> bool {
        self.outcome
            .lock()
            .is_ok_and(|outcome| matches!(*outcome, Some(Err(_))))
    }

    /// The answers, waiting until `deadline` for a run still going.
    fn wait(&self, deadline: Instant, n_files: usize) -> JobAnswer {
        let pending = || vec![FileAnswer::Pending; n_files];
        let Ok(mut outcome) = self.outcome.lock() else {
            return JobAnswer {
                answers: pending(),
                failure: None,
            };
        };
        while outcome.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return JobAnswer {
                    answers: pending(),
                    failure: None,
                };
            }
            outcome = match self.done.wait_timeout(outcome, left) {
                Ok((outcome, _)) => outcome,
                Err(_) => {
                    return JobAnswer {
                        answers: pending(),
                        failure: None,
                    };
                }
            };
        }
        match outcome.as_ref().expect("checked above") {
            Ok(by_file) => JobAnswer {
                answers: self
                    .files
                    .iter()
                    .map(|file| {
                        FileAnswer::Diagnostics(by_file.get(file).cloned().unwrap_or_default())
                    })
                    .collect(),
                failure: None,
            },
            Err(why) => JobAnswer {
                answers: pending(),
                failure: Some(LspError::Exited {
                    during: "the project check".into(),
                    detail: format!(" ({why})"),
                }),
            },
        }
    }

    fn finish(&self, result: Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String>) {
        if result.is_ok()
            && let Ok(mut took) = self.took.lock()
        {
            *took = Some(self.started_at.elapsed());
        }
        if let Ok(mut outcome) = self.outcome.lock() {
            *outcome = Some(result);
        }
        self.done.notify_all();
    }
}

/// The command, its output read fully, parsed into answers per file.
fn execute(
    cli: BatchCli,
    launch: &Launch,
    files: &[PathBuf],
    until: Instant,
) -> Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String> {
    let (program, root) = (&launch.program, &launch.root);
    let mut command = crate::util::confine::server_command(program)
        .map_err(|error| format!("cannot start {}: {error}", program.display()))?;
    // The caller's environment, as for the server (see `lsp::environment`).
    crate::lsp::environment::apply(&mut command, &launch.env);
    match cli {
        BatchCli::Pyrefly => {
            command.args(["check", "--output-format", "json", "--min-severity", "warn"]);
        }
        BatchCli::Ty => {
            command.args(["check", "--output-format", "gitlab", "--no-progress"]);
        }
        // `--force-exclude`: the project's excludes hold for files named
        // on the command line too; nothing is fixed, findings are no
        // failure of the run, and no `.ruff_cache` is left in the project.
        BatchCli::Ruff => {
            command.args([
                "check",
                "--output-format",
                "json",
                "--no-fix",
                "--exit-zero",
                "--force-exclude",
                "--no-cache",
                "--quiet",
            ]);
        }
    }
    command
        .args(files)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = GroupChild::spawn(&mut command)
        .map_err(|error| format!("cannot start {}: {error}", program.display()))?;
    let mut stdout = child.child_mut().stdout.take().ok_or("no stdout pipe")?;
    let mut stderr = child.child_mut().stderr.take().ok_or("no stderr pipe")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let reader = std::thread::spawn(move || {
        let mut output = Vec::new();
        let _ = stdout.read_to_end(&mut output);
        output
    });
    match child.wait_timeout(until.saturating_duration_since(Instant::now())) {
        Ok(Some(_)) => {}
        _ => {
            child.kill();
            return Err("stopped: it ran out of time".into());
        }
    }
    let output = reader.join().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    let parsed = match cli {
        BatchCli::Pyrefly => parse_pyrefly(&output, root),
        BatchCli::Ty => parse_ty(&output, root),
        BatchCli::Ruff => parse_ruff(&output, root),
    };
    parsed.map_err(|why| {
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!("{} check: {why}; stderr: {last}", program.display())
    })
}

/// `ty check --output-format gitlab`: a list of GitLab Code Quality
/// entries, `{"check_name", "description": "<check>: <message>",
/// "severity": "major"|"minor"|…, "location": {"path", "positions":
/// {"begin": {"line", "column"}, "end": …}}}`, 1-based, paths relative to
/// the root.
fn parse_ty(output: &[u8], root: &Path) -> Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String> {
    let value: Value =
        serde_json::from_slice(output).map_err(|error| format!("not JSON ({error})"))?;
    let entries = value.as_array().ok_or("not a list of findings")?;
    let mut by_file: HashMap<PathBuf, Vec<ServerDiagnostic>> = HashMap::new();
    let mut texts = SourceLines::default();
    for entry in entries {
        let location = &entry["location"];
        let Some(path) = location["path"].as_str() else {
            continue;
        };
        let path = uri::comparable(&root.join(path));
        let point = |end: &str, key: &str| {
            location["positions"][end][key].as_u64().unwrap_or(1).max(1) as u32
        };
        let check = entry["check_name"].as_str().unwrap_or_default();
        let description = entry["description"].as_str().unwrap_or_default();
        let message = description
            .strip_prefix(check)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(description);
        // GitLab's scale: ty writes errors as "major", warnings as "minor".
        let severity = match entry["severity"].as_str() {
            Some("minor") => 2,
            Some("info") => 3,
            _ => 1,
        };
        let diagnostic = json!({
            "range": {
                "start": texts.position(&path, point("begin", "line"), point("begin", "column")),
                "end": texts.position(&path, point("end", "line"), point("end", "column")),
            },
            "severity": severity,
            "code": check,
            "source": "ty",
            "message": message,
        });
        if let Ok(diagnostic) = serde_json::from_value(diagnostic) {
            by_file.entry(path).or_default().push(diagnostic);
        }
    }
    Ok(by_file)
}

/// `ruff check --output-format json`: a list of `{"code", "message",
/// "location": {"row", "column"}, "end_location", "filename", "fix":
/// {"message"}}`, 1-based character columns, absolute file names. Made to
/// read as `ruff server` says it after an edit: source `Ruff`, an error
/// for a syntax error (`invalid-syntax`, or no code), an undefined name
/// (F821) or a file it cannot read (E902), a warning for the rest, the fix's message as a
/// `help:` line, unused imports and variables tagged unnecessary.
fn parse_ruff(
    output: &[u8],
    root: &Path,
) -> Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String> {
    let value: Value =
        serde_json::from_slice(output).map_err(|error| format!("not JSON ({error})"))?;
    let entries = value.as_array().ok_or("not a list of findings")?;
    let mut by_file: HashMap<PathBuf, Vec<ServerDiagnostic>> = HashMap::new();
    let mut lines = SourceLines::default();
    for entry in entries {
        let Some(file) = entry["filename"].as_str() else {
            continue;
        };
        let path = uri::comparable(&root.join(file));
        let point = |key: &str, part: &str| entry[key][part].as_u64().unwrap_or(1).max(1) as u32;
        let code = entry["code"].as_str();
        let severity = match code {
            None | Some("invalid-syntax") | Some("F821") | Some("E902") => 1,
            _ => 2,
        };
        let mut message = entry["message"].as_str().unwrap_or_default().to_string();
        if let Some(help) = entry["fix"]["message"].as_str() {
            message.push_str("\n\nhelp: ");
            message.push_str(help);
        }
        let mut diagnostic = json!({
            "range": {
                "start": lines.position(&path, point("location", "row"), point("location", "column")),
                "end": lines.position(&path, point("end_location", "row"), point("end_location", "column")),
            },
            "severity": severity,
            "code": code,
            "source": "Ruff",
            "message": message,
        });
        if matches!(code, Some("F401") | Some("F841")) {
            diagnostic["tags"] = json!([1]);
        }
        if let Ok(diagnostic) = serde_json::from_value(diagnostic) {
            by_file.entry(path).or_default().push(diagnostic);
        }
    }
    Ok(by_file)
}

/// The lines of the files a command line reported on, read once each, to
/// turn its 1-based character columns into LSP positions.
#[derive(Default)]
struct SourceLines(HashMap<PathBuf, Vec<String>>);

impl SourceLines {
    fn position(&mut self, path: &Path, line: u32, column: u32) -> Value {
        let lines = self.0.entry(path.to_path_buf()).or_insert_with(|| {
            fsread::read_text(path, limits::SOURCE, Links::Follow)
                .ok()
                .flatten()
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect()
        });
        let text = lines
            .get(line as usize - 1)
            .map(String::as_str)
            .unwrap_or("");
        json!({"line": line - 1, "character": utf16_offset(text, column - 1)})
    }
}

/// `pyrefly check --output-format json`: `{"errors": [{"path", "line",
/// "column", "stop_line", "stop_column", "name", "description",
/// "severity"}]}`, lines and columns 1-based, paths relative to the root.
fn parse_pyrefly(
    output: &[u8],
    root: &Path,
) -> Result<HashMap<PathBuf, Vec<ServerDiagnostic>>, String> {
    let value: Value =
        serde_json::from_slice(output).map_err(|error| format!("not JSON ({error})"))?;
    let errors = value
        .get("errors")
        .and_then(Value::as_array)
        .ok_or("no \"errors\" list")?;
    let mut by_file: HashMap<PathBuf, Vec<ServerDiagnostic>> = HashMap::new();
    let mut lines = SourceLines::default();
    for error in errors {
        let Some(path) = error.get("path").and_then(Value::as_str) else {
            continue;
        };
        let path = uri::comparable(&root.join(path));
        let number = |key: &str| error.get(key).and_then(Value::as_u64).unwrap_or(1).max(1) as u32;
        let mut position = |line: u32, column: u32| lines.position(&path, line, column);
        let severity = match error.get("severity").and_then(Value::as_str) {
            Some("warn") | Some("warning") => 2,
            Some("info") => 3,
            _ => 1,
        };
        let diagnostic = json!({
            "range": {
                "start": position(number("line"), number("column")),
                "end": position(number("stop_line"), number("stop_column")),
            },
            "severity": severity,
            "code": error.get("name").cloned().unwrap_or(Value::Null),
            "source": "Pyrefly",
            "message": error.get("description").and_then(Value::as_str).unwrap_or_default(),
        });
        if let Ok(diagnostic) = serde_json::from_value(diagnostic) {
            by_file.entry(path).or_default().push(diagnostic);
        }
    }
    Ok(by_file)
}

/// The UTF-16 offset of the `chars`-th character of `line` (LSP positions
/// count UTF-16 units; the command line counts characters).
fn utf16_offset(line: &str, chars: u32) -> u32 {
    line.chars()
        .take(chars as usize)
        .map(|c| c.len_utf16() as u32)
        .sum::<u32>()
        + chars.saturating_sub(line.chars().count() as u32)
}

fn job_key(job: &ServerJob) -> u64 {
    let mut text = format!(
        "{}\n{}\n",
        job.launch.program.display(),
        job.launch.root.display()
    );
    // Another caller's environment is another result (see
    // `lsp::environment`).
    for (name, value) in crate::lsp::environment::identity(&job.launch.env) {
        text.push_str(&format!("{name}={value}\n"));
    }
    for file in &job.files {
        text.push_str(&file.path.to_string_lossy());
        text.push('\n');
    }
    fnv1a(text.as_bytes())
}

/// Size and modification time of every file the job covers, of the
/// configuration files in its root and of what they make the checker read
/// besides (see [`super::deps`]).
fn stamps(job: &ServerJob) -> u64 {
    let root = &job.launch.root;
    let configs: Vec<PathBuf> = CONFIG_FILES
        .iter()
        .map(|name| root.join(name))
        .filter(|path| path.is_file())
        .collect();
    // What the checker reads besides the job's files: the project's other
    // Python files (git-ignored generated code the job does not list), an
    // extra search path outside the project, the virtual environment's
    // packages.
    let deps = super::deps::dependencies(
        root,
        &[".py".to_string()],
        &configs,
        &[],
        "",
        &crate::lsp::environment::python_search(&job.launch.env),
    );
    let mut paths: Vec<PathBuf> = job.files.iter().map(|f| f.path.clone()).collect();
    let project = super::deps::python_project(root, CONFIG_FILES);
    paths.extend(project.sources);
    paths.extend(project.linked_folders);
    paths.extend(checker_configs(root, project.configs));
    paths.sort();
    paths.dedup();
    // An importable folder counts by being there: its times move with
    // every file written in it (`__pycache__` after a test run).
    let mut folders = project.folders;
    folders.sort();
    let mut text = format!(
        "{:x}\n",
        stamp_paths(paths.into_iter().chain(configs).chain(deps))
    );
    for folder in folders {
        text.push_str(&folder.to_string_lossy());
        text.push('\n');
    }
    fnv1a(text.as_bytes())
}

/// Every configuration file a checker's command line may read besides the
/// root's own (engine attack E-3, E-7, E-25: a kept ruff or ty result
/// outlived a change to one of these): the `nested` ones under the root
/// (ruff and ty take the closest above each file), those in the folders
/// above it (a monorepo's root), the user's own (`~/.config/ruff`,
/// `~/.config/ty`), and the files they `extend`. A missing one is stamped
/// as missing, so creating it is a change too.
fn checker_configs(root: &Path, nested: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut found = nested;
    found.extend(super::deps::python_configs_outside(root));
    // What they `extend`, and what that extends in turn (re-attack RE-8).
    let extended = super::deps::ruff_extends(&found);
    found.extend(extended);
    found
}

/// Size and modification time of the configuration files in the job's
/// root: a server that checked the project under other ones is out of date.
pub fn config_stamps(job: &ServerJob) -> u64 {
    stamp_paths(CONFIG_FILES.iter().map(|name| job.launch.root.join(name)))
}

fn stamp_paths(paths: impl Iterator<Item = PathBuf>) -> u64 {
    let mut text = String::new();
    for path in paths {
        match std::fs::metadata(&path) {
            // The status-change time too: a program can set the
            // modification time back (`touch -r`, `cp -p`, `rsync -t`),
            // never this one.
            Ok(metadata) => text.push_str(&format!(
                "{}:{}:{}:{}:{}:{}\n",
                metadata.ino(),
                metadata.len(),
                metadata.mtime(),
                metadata.mtime_nsec(),
                metadata.ctime(),
                metadata.ctime_nsec()
            )),
            Err(_) => text.push_str("missing\n"),
        }
    }
    fnv1a(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyrefly_json_becomes_server_diagnostics() {
        let root = std::env::temp_dir().join(format!("ralph-pyrefly-parse-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.py"), "é = 1\nx: int = 'a'\n").unwrap();
        let output = br#"{"errors": [
            {"path": "a.py", "line": 2, "column": 10, "stop_line": 2, "stop_column": 13,
             "name": "bad-assignment", "description": "no", "severity": "error"},
            {"path": "a.py", "line": 1, "column": 1, "stop_line": 1, "stop_column": 2,
             "name": "unused", "description": "maybe", "severity": "warn"}
        ]}"#;
        let parsed = parse_pyrefly(output, &root).unwrap();
        let diagnostics = &parsed[&uri::comparable(&root.join("a.py"))];
        assert_eq!(diagnostics.len(), 2);
        assert_eq!(diagnostics[0].range.start.line, 1);
        assert_eq!(diagnostics[0].range.start.character, 9);
        assert_eq!(diagnostics[0].severity, Some(1));
        assert_eq!(
            diagnostics[0].code_text().as_deref(),
            Some("bad-assignment")
        );
        assert_eq!(diagnostics[1].severity, Some(2));
        assert!(parse_pyrefly(b"not json", &root).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ty_gitlab_json_becomes_server_diagnostics() {
        let root = std::env::temp_dir().join(format!("ralph-ty-parse-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.py"), "x: int = \"a\"\n").unwrap();
        let output = br#"[{"check_name": "invalid-assignment",
            "description": "invalid-assignment: Object of type `Literal[\"a\"]` is not assignable to `int`",
            "severity": "major", "fingerprint": "1",
            "location": {"path": "a.py", "positions": {"begin": {"line": 1, "column": 10}, "end": {"line": 1, "column": 13}}}},
            {"check_name": "unused-ignore-comment", "description": "unused-ignore-comment: Unused", "severity": "minor",
            "location": {"path": "a.py", "positions": {"begin": {"line": 1, "column": 1}, "end": {"line": 1, "column": 2}}}}]"#;
        let parsed = parse_ty(output, &root).unwrap();
        let diagnostics = &parsed[&uri::comparable(&root.join("a.py"))];
        assert_eq!(diagnostics.len(), 2);
        let first = serde_json::to_value(&diagnostics[0]).unwrap();
        assert_eq!(first["range"]["start"], json!({"line": 0, "character": 9}));
        assert_eq!(first["severity"], 1);
        assert_eq!(first["code"], "invalid-assignment");
        assert_eq!(
            first["message"],
            "Object of type `Literal[\"a\"]` is not assignable to `int`"
        );
        assert_eq!(
            serde_json::to_value(&diagnostics[1]).unwrap()["severity"],
            2
        );
        assert!(parse_ty(b"{}", &root).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ruff_json_becomes_server_diagnostics_as_its_server_says_them() {
        let root = std::env::temp_dir().join(format!("ralph-ruff-parse-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.py"), "import os\nx = f\"é\"\ny = nope\n").unwrap();
        let file = root.join("a.py").display().to_string();
        let output = json!([
            {"code": "F401", "message": "`os` imported but unused", "filename": file,
             "location": {"row": 1, "column": 8}, "end_location": {"row": 1, "column": 10},
             "fix": {"message": "Remove unused import: `os`"}},
            {"code": "F541", "message": "f-string without any placeholders", "filename": file,
             "location": {"row": 2, "column": 5}, "end_location": {"row": 2, "column": 9},
             "fix": null},
            {"code": "F821", "message": "Undefined name `nope`", "filename": file,
             "location": {"row": 3, "column": 5}, "end_location": {"row": 3, "column": 9}},
            {"code": "invalid-syntax", "message": "Expected `)`", "filename": file,
             "location": {"row": 3, "column": 1}, "end_location": {"row": 3, "column": 2}}
        ]);
        let parsed = parse_ruff(output.to_string().as_bytes(), &root).unwrap();
        let diagnostics = &parsed[&uri::comparable(&root.join("a.py"))];
        let values: Vec<Value> = diagnostics
            .iter()
            .map(|d| serde_json::to_value(d).unwrap())
            .collect();
        assert_eq!(values[0]["severity"], 2);
        assert_eq!(values[0]["source"], "Ruff");
        assert_eq!(values[0]["tags"], json!([1]));
        assert_eq!(
            values[0]["message"],
            "`os` imported but unused\n\nhelp: Remove unused import: `os`"
        );
        assert_eq!(values[1]["code"], "F541");
        assert_eq!(
            values[1]["range"]["start"],
            json!({"line": 1, "character": 4})
        );
        assert_eq!(values[2]["severity"], 1);
        assert_eq!(values[3]["severity"], 1, "a syntax error is an error");
        assert!(parse_ruff(b"{}", &root).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn utf16_offsets_count_surrogate_pairs() {
        assert_eq!(utf16_offset("abc", 2), 2);
        assert_eq!(utf16_offset("😀b", 1), 2);
        assert_eq!(utf16_offset("ab", 5), 5);
    }
}
