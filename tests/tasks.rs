//! Task steps: the markdown round trip as properties, the transcript
//! reconstruction against real Claude Code transcripts, and parallel CLI
//! updates through the real binary.

use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use ralph_hooks::tasks::doc::TaskDoc;
use ralph_hooks::tasks::steps;
use ralph_hooks::tasks::todos::{self, TodoSource, TodoStatus};

use crate::util::{self, TempDir};

/// One thing the CLI can do to a task.
#[derive(Debug, Clone)]
enum Action {
    Set(Vec<String>),
    Add(String),
    Start(usize),
    Complete(usize, Option<String>),
    Skip(usize, Option<String>),
    Reorder(Vec<usize>),
    Progress(String),
    Field(String, String),
}

/// Text as people and agents type it: letters, digits, Korean, markdown
/// punctuation that our format itself uses, and stray newlines.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 가-힣()\\[\\]#*>:_.,!?/`'\"-]{0,24}(\n[a-z #-]{0,8})?"
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        prop::collection::vec(text(), 1..6).prop_map(Action::Set),
        text().prop_map(Action::Add),
        (0usize..8).prop_map(Action::Start),
        (0usize..8, prop::option::of(text())).prop_map(|(i, n)| Action::Complete(i, n)),
        (0usize..8, prop::option::of(text())).prop_map(|(i, n)| Action::Skip(i, n)),
        prop::collection::vec(0usize..100, 0..8).prop_map(Action::Reorder),
        text().prop_map(Action::Progress),
        ("[A-Z][a-z]{1,8}", text()).prop_map(|(k, v)| Action::Field(k, v)),
    ]
}

/// Applies an action the way the CLI would; refusals (unknown ids, empty
/// text) leave the document as it was, as they do there.
fn apply(doc: &mut TaskDoc, action: &Action) {
    let id_at = |doc: &TaskDoc, i: usize| {
        doc.steps()
            .get(i % doc.steps().len().max(1))
            .map(|s| s.id.clone())
            .unwrap_or_else(|| "s1".into())
    };
    let _ = match action {
        Action::Set(contents) => steps::set_steps(doc, contents).map(drop),
        Action::Add(content) => steps::add_step(doc, content).map(drop),
        Action::Start(i) => steps::start_step(doc, &id_at(doc, *i), None).map(drop),
        Action::Complete(i, note) => {
            steps::complete_step(doc, &id_at(doc, *i), note.as_deref()).map(drop)
        }
        Action::Skip(i, note) => steps::skip_step(doc, &id_at(doc, *i), note.as_deref()).map(drop),
        Action::Reorder(keys) => {
            // A permutation of the real ids, shuffled by the generated keys.
            let mut ids: Vec<(usize, String)> = doc
                .steps()
                .iter()
                .enumerate()
                .map(|(i, s)| (keys.get(i).copied().unwrap_or(i), s.id.clone()))
                .collect();
            ids.sort();
            let order: Vec<String> = ids.into_iter().map(|(_, id)| id).collect();
            steps::reorder_steps(doc, &order).map(drop)
        }
        Action::Progress(text) => {
            doc.add_progress(text);
            Ok(())
        }
        Action::Field(key, value) => {
            doc.set_field(key, value);
            Ok(())
        }
    };
}

fn new_doc(description: &str) -> TaskDoc {
    let mut doc = TaskDoc::new("task_20261121T120000Z");
    doc.set_field("Status", "in_progress");
    doc.set_field("Priority", "medium");
    doc.set_field("Created", "2026-11-21T12:00:00.000Z");
    doc.set_description(description);
    doc.add_progress("Task started");
    doc.set_last_activity("2026-11-21T12:00:00.000Z");
    doc
}

/// Lines a person adds by hand, and where: each is unlike anything we
/// write, so it can be found again verbatim.
#[derive(Debug, Clone)]
enum Addition {
    /// A section of its own, before the section at this index.
    Section(usize, String),
    /// An indented note under the step at this index.
    StepNote(usize, String),
    /// A free line at the top of the Progress section.
    ProgressLine(String),
    /// A free line at the end of the file.
    Trailer(String),
}

/// Trailing spaces are not content: the parser trims line ends, as a
/// markdown editor would.
fn person_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 가-힣,.!?]{0,19}[a-zA-Z0-9가-힣,.!?]"
}

fn addition() -> impl Strategy<Value = Addition> {
    prop_oneof![
        (0usize..6, person_text()).prop_map(|(i, t)| Addition::Section(i, t)),
        (0usize..8, person_text()).prop_map(|(i, t)| Addition::StepNote(i, t)),
        person_text().prop_map(Addition::ProgressLine),
        person_text().prop_map(Addition::Trailer),
    ]
}

/// Inserts the additions into a rendered file; returns the text and the
/// lines that must survive.
fn insert(text: &str, additions: &[Addition]) -> (String, Vec<String>) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut expected = Vec::new();
    for (n, addition) in additions.iter().enumerate() {
        match addition {
            Addition::Section(i, body) => {
                let headings: Vec<usize> = (0..lines.len())
                    .filter(|&k| lines[k].starts_with("## "))
                    .collect();
                let at = headings[i % headings.len()];
                let heading = format!("## Person section {n}");
                let line = format!("Person wrote {n}: {body}");
                lines.splice(
                    at..at,
                    [heading.clone(), String::new(), line.clone(), String::new()],
                );
                expected.extend([heading, line]);
            }
            Addition::StepNote(i, body) => {
                let step_lines: Vec<usize> = (0..lines.len())
                    .filter(|&k| lines[k].starts_with("- ["))
                    .collect();
                if step_lines.is_empty() {
                    continue;
                }
                let at = step_lines[i % step_lines.len()] + 1;
                let line = format!("  - person note {n}: {body}");
                lines.insert(at, line.clone());
                expected.push(line);
            }
            Addition::ProgressLine(body) => {
                let Some(at) = lines.iter().position(|l| l == "## Progress") else {
                    continue;
                };
                let line = format!("Person progress remark {n}: {body}");
                lines.insert(at + 2, line.clone());
                expected.push(line);
            }
            Addition::Trailer(body) => {
                let line = format!("Person trailer {n}: {body}");
                lines.push(line.clone());
                expected.push(line);
            }
        }
    }
    (lines.join("\n") + "\n", expected)
}

proptest! {
    // Failures are not persisted to a file: each one found becomes a named
    // unit test in src/tasks/doc.rs instead.
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// parse ∘ write is the identity on every document the actions make,
    /// and writing is a fixed point.
    #[test]
    fn parse_of_write_is_identity(description in text(), actions in prop::collection::vec(action(), 0..16)) {
        let mut doc = new_doc(&description);
        for action in &actions {
            apply(&mut doc, action);
            let written = doc.render();
            let parsed = TaskDoc::parse(&written, "other");
            prop_assert_eq!(&parsed, &doc, "file was:\n{}", written);
            prop_assert_eq!(parsed.render(), written);
        }
    }

    /// What a person added survives parsing and any later step changes
    /// (except replacing all steps, which drops the old steps' notes).
    #[test]
    fn unknown_content_survives(
        setup in prop::collection::vec(text(), 1..6),
        additions in prop::collection::vec(addition(), 1..6),
        later in prop::collection::vec(action(), 0..12),
    ) {
        let mut doc = new_doc("a task");
        steps::set_steps(&mut doc, &setup).ok();
        let (text, expected) = insert(&doc.render(), &additions);
        let mut doc = TaskDoc::parse(&text, "other");
        for action in later.iter().filter(|a| !matches!(a, Action::Set(_))) {
            apply(&mut doc, action);
        }
        let written = doc.render();
        for line in &expected {
            prop_assert!(written.lines().any(|l| l == line), "lost {:?}:\n{}", line, written);
        }
        prop_assert_eq!(TaskDoc::parse(&written, "other").render(), written);
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("transcripts")
        .join(name)
}

#[test]
fn todo_write_list_from_a_real_transcript() {
    let list = todos::current_list(&fixture("todowrite-2.1.330.jsonl")).unwrap();
    assert_eq!(list.source, TodoSource::TodoWrite);
    let items: Vec<(&str, TodoStatus)> = list
        .items
        .iter()
        .map(|i| (i.content.as_str(), i.status))
        .collect();
    assert_eq!(
        items,
        vec![
            ("Read the code", TodoStatus::Completed),
            ("Fix the bug", TodoStatus::InProgress),
            ("Run the tests", TodoStatus::Pending),
        ]
    );
}

#[test]
fn task_tool_list_from_a_real_transcript() {
    let list = todos::current_list(&fixture("task-tools-2.1.330.jsonl")).unwrap();
    assert_eq!(list.source, TodoSource::TaskTools);
    let items: Vec<(&str, &str, TodoStatus)> = list
        .items
        .iter()
        .map(|i| (i.id.as_str(), i.content.as_str(), i.status))
        .collect();
    assert_eq!(
        items,
        vec![
            ("1", "Read the code", TodoStatus::Completed),
            ("2", "Fix the bug", TodoStatus::InProgress),
            ("3", "Run all the tests", TodoStatus::Pending),
        ]
    );
}

#[test]
fn only_the_tail_of_a_long_transcript_is_read() {
    // A TodoWrite buried under more than the scan window is not found; the
    // same call near the end is.
    let temp = TempDir::new("transcript-tail");
    let path = temp.path().join("t.jsonl");
    let todo = std::fs::read_to_string(fixture("todowrite-2.1.330.jsonl")).unwrap();
    let filler_line = format!(
        "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
        "x".repeat(1000)
    );
    let n_filler = (todos::MAX_SCAN_BYTES as usize / filler_line.len()) + 10;
    let mut text = todo.clone();
    text.push_str(&filler_line.repeat(n_filler));
    std::fs::write(&path, &text).unwrap();
    assert!(todos::current_list(&path).is_none());
    text.push_str(&todo);
    std::fs::write(&path, &text).unwrap();
    assert_eq!(todos::current_list(&path).unwrap().items.len(), 3);
}

fn cli(project: &Path, args: &[&str]) -> Command {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    command
}

fn run_ok(project: &Path, args: &[&str]) -> String {
    let output = cli(project, args).output().unwrap();
    assert!(
        output.status.success(),
        "ralph-hooks {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn parallel_step_updates_lose_nothing() {
    const N: usize = 16;
    let temp = TempDir::new("tasks-parallel");
    let project = temp.path();
    run_ok(project, &["task", "start", "parallel work"]);
    let contents: Vec<String> = (1..=N).map(|i| format!("step number {i}")).collect();
    let mut args = vec!["task", "steps", "set"];
    args.extend(contents.iter().map(String::as_str));
    run_ok(project, &args);

    // 16 completions and 16 additions, all at once.
    let mut children = Vec::new();
    for i in 1..=N {
        let id = format!("s{i}");
        children.push(
            cli(project, &["task", "step", "complete", &id])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        let text = format!("added in parallel {i}");
        children.push(
            cli(project, &["task", "step", "add", &text])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }

    let status: serde_json::Value =
        serde_json::from_str(&run_ok(project, &["task", "status", "--json"])).unwrap();
    let task = &status["task"];
    assert_eq!(task["stepsProgress"]["total"], 2 * N, "{task}");
    assert_eq!(task["stepsProgress"]["done"], N, "{task}");
    let ids: std::collections::BTreeSet<&str> = task["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2 * N, "step ids must be unique: {ids:?}");
    for i in 1..=N {
        let added = format!("added in parallel {i}");
        assert!(
            task["steps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["content"] == added.as_str()),
            "lost {added}"
        );
    }
    let done_lines = task["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p.as_str().unwrap().ends_with("— done"))
        .count();
    assert_eq!(done_lines, N);
    let events = std::fs::read_to_string(
        project
            .join(".claude")
            .join("orchestrator")
            .join("events.jsonl"),
    )
    .unwrap();
    let completed = events
        .lines()
        .filter(|l| l.contains("\"step_completed\""))
        .count();
    let added = events
        .lines()
        .filter(|l| l.contains("\"step_added\""))
        .count();
    assert_eq!((completed, added), (N, N));
    for line in events.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("torn event line {line:?}: {e}"));
    }
}

/// Without `CLAUDE_PROJECT_DIR` (a terminal), the CLI run from a folder of
/// the project uses the project's state root, found as git finds its top,
/// and says which root it used.
#[test]
fn the_cli_in_a_subdirectory_uses_the_projects_state_root() {
    let temp = crate::util::TempDir::new("cli-subdir");
    let project = temp.path();
    let src = project.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(project)
        .status()
        .unwrap();
    assert!(status.success());
    let mut command = crate::util::command("ralph-hooks", project);
    command
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(&src)
        .args(["task", "start", "x"]);
    let output = crate::util::run_with_stdin(command, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!src.join(".claude").exists());
    assert!(project.join(".claude/orchestrator/tasks").is_dir());
    assert!(
        stderr.contains(&format!("project root {}", project.display())),
        "{stderr}"
    );
    // Now that the project has .claude/, that is what is found, even in a
    // folder of it.
    let mut command = crate::util::command("ralph-hooks", project);
    command
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(&src)
        .args(["status", "--json"]);
    let output = crate::util::run_with_stdin(command, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"x\""), "{stdout}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("the nearest folder with .claude/"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
