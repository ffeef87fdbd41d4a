//! The receipt's content, pure: a finished loop (its state and the facts
//! gathered around it) in, an in-toto Statement v1 out, and back again for
//! `verify`.
//!
//! The statement's subject is the git tree the loop verified; its predicate
//! is a test-result v0.1 (`result`, `passedTests`, `failedTests`, …) with
//! this tool's detail under `ralphHooks`: the loop (goal, id, iterations,
//! times, budgets) and one entry per condition. Only digests, counts and
//! the loop's own terms go in: no check output, no environment variable,
//! no problem message (they may hold anything).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::ralph::loop_state::{HistoryEntry, LoopState, LoopStatus, record_counts};

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://in-toto.io/attestation/test-result/v0.1";
/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The condition keys the loop's history uses for its two diagnostics
/// scopes (`failed` names and `conditions` keys).
const TOUCHED_KEY: &str = "diagnostics";
const PROJECT_KEY: &str = "project";

/// What was gathered around the loop when it ended.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The git tree of the work (`None`: it could not be computed; then
    /// `tree_note` says why).
    pub tree: Option<String>,
    pub tree_note: Option<String>,
    /// The project root relative to the git work tree's top, `""` or
    /// `"sub/dir/"`: where the checks ran inside the tree.
    pub prefix: String,
    /// Paths (relative to the project root) left out of the tree: the
    /// state root.
    pub excluded: Vec<String>,
    /// A name for the subject: the project folder's name.
    pub name: String,
    /// Language servers by name → version (`"unknown"` when it could not
    /// be told).
    pub servers: BTreeMap<String, String>,
    /// This tool's version.
    pub tool_version: String,
}

/// The statement for a finished (or cancelled) loop.
pub fn build(state: &LoopState, facts: &Facts) -> Value {
    let last = state.history.last();
    let conditions = conditions(state, last, &facts.servers);
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for condition in &conditions {
        let name = condition["name"].as_str().unwrap_or_default().to_string();
        match condition["passed"].as_bool() {
            Some(true) => passed.push(name),
            _ => failed.push(name),
        }
    }
    let mut digest = serde_json::Map::new();
    if let Some(tree) = &facts.tree {
        digest.insert("gitTree".into(), json!(tree));
    }
    let mut subject = json!({"name": facts.name, "digest": digest});
    let mut annotations = serde_json::Map::new();
    if !facts.prefix.is_empty() {
        annotations.insert("projectPath".into(), json!(facts.prefix));
    }
    if !facts.excluded.is_empty() {
        annotations.insert("excluded".into(), json!(facts.excluded));
    }
    if let Some(note) = &facts.tree_note {
        annotations.insert("treeUnavailable".into(), json!(note));
    }
    if !annotations.is_empty() {
        subject["annotations"] = Value::Object(annotations);
    }
    let stamp = |time: chrono::DateTime<chrono::Utc>| {
        time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let ended = state.ended_at.unwrap_or(state.updated_at);
    let result = if state.status == LoopStatus::Completed {
        "PASSED"
    } else {
        "FAILED"
    };
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": result,
            "configuration": [{"name": "ralph-hooks", "annotations": {"version": facts.tool_version}}],
            "passedTests": passed,
            "warnedTests": [],
            "failedTests": failed,
            "ralphHooks": {
                "loop": {
                    "id": state.id,
                    "goal": state.goal,
                    "status": state.status.as_str(),
                    "reason": state.completion_reason,
                    "detail": state.completion_detail,
                    "iterations": state.history.len(),
                    "failedIterations": state.iteration,
                    "maxIterations": state.max_iterations,
                    "checkTimeoutSecs": state.check_timeout_secs,
                    "startedAt": stamp(state.started_at),
                    "endedAt": stamp(ended),
                },
                "budget": {
                    "limits": state.budget,
                    "spent": {
                        "tokens": state.spend.tokens.total(),
                        "costUsd": state.spend.cost_usd,
                        "activeSecs": state.active_secs(ended),
                    },
                },
                "conditions": conditions,
            },
        },
    })
}

/// One entry per completion condition, as the last Stop found it (a loop
/// cancelled before any Stop has `evaluated: false` entries).
fn conditions(
    state: &LoopState,
    last: Option<&HistoryEntry>,
    versions: &BTreeMap<String, String>,
) -> Vec<Value> {
    let mut out = Vec::new();
    let failed = |key: &str| last.is_none_or(|entry| entry.failed.iter().any(|f| f == key));
    for command in &state.checks {
        let name = format!("check:{command}");
        let run = last.and_then(|entry| entry.checks.iter().find(|run| run.command == *command));
        let mut entry = json!({"kind": "command", "name": name, "command": command});
        match run {
            Some(run) => {
                entry["passed"] = json!(run.passed());
                entry["exitCode"] = json!(run.exit_code);
                entry["timedOut"] = json!(run.timed_out);
                entry["durationMs"] = json!(run.duration_ms);
                if !run.output_sha256.is_empty() {
                    entry["output"] = json!({"digest": {"sha256": run.output_sha256}});
                }
            }
            None => {
                entry["passed"] = json!(false);
                entry["evaluated"] = json!(false);
            }
        }
        out.push(entry);
    }
    if let Some(promise) = &state.promise {
        let mut entry = json!({"kind": "promise", "name": "promise", "promise": promise});
        match last {
            Some(_) => {
                entry["found"] = json!(!failed("promise"));
                entry["passed"] = json!(!failed("promise"));
            }
            None => {
                entry["passed"] = json!(false);
                entry["evaluated"] = json!(false);
            }
        }
        out.push(entry);
    }
    for (wanted, key, scope) in [
        (state.diagnostics, TOUCHED_KEY, "touched"),
        (state.project, PROJECT_KEY, "project"),
    ] {
        if !wanted {
            continue;
        }
        let after = last.and_then(|entry| entry.conditions.get(key));
        let before = if key == PROJECT_KEY {
            state.start_record.as_ref()
        } else {
            None
        }
        .or_else(|| {
            state
                .history
                .iter()
                .find_map(|entry| entry.conditions.get(key))
        });
        let mut entry = json!({"kind": "diagnostics", "name": key, "scope": scope,
                               "noWarnings": state.no_warnings});
        if key == PROJECT_KEY {
            entry["paths"] = json!(state.paths);
        } else {
            let root = std::path::Path::new(&state.project_root);
            let files: Vec<String> = state
                .touched_files
                .iter()
                .map(|file| project_relative(root, file))
                .collect();
            entry["files"] = json!(files);
        }
        match after {
            Some(record) => {
                let names = record_servers(record);
                let servers: Vec<Value> = names
                    .iter()
                    .map(|name| {
                        json!({"name": name, "version": versions.get(name).map_or("unknown", String::as_str)})
                    })
                    .collect();
                entry["servers"] = json!(servers);
                entry["after"] = counts(record);
                entry["inconclusive"] = json!(
                    record
                        .get("inconclusive")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                );
                entry["unchecked"] = json!(
                    record
                        .get("unchecked")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                );
                entry["passed"] = json!(!failed(key));
            }
            None => {
                entry["passed"] = json!(last.is_some() && !failed(key));
                if last.is_none() {
                    entry["evaluated"] = json!(false);
                }
            }
        }
        if let Some(record) = before {
            entry["before"] = counts(record);
        }
        out.push(entry);
    }
    out
}

fn counts(record: &Value) -> Value {
    let (errors, warnings) = record_counts(record);
    json!({"errors": errors, "warnings": warnings})
}

/// The server names a check record lists (`servers`), sorted.
pub fn record_servers(record: &Value) -> Vec<String> {
    let mut names: Vec<String> = record
        .get("servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every server a finished loop's last check used, for their versions.
pub fn servers_used(state: &LoopState) -> Vec<String> {
    let mut names: Vec<String> = state
        .history
        .last()
        .into_iter()
        .flat_map(|entry| entry.conditions.values())
        .flat_map(record_servers)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `file` relative to `root` when it is under it; else as given.
pub fn project_relative(root: &std::path::Path, file: &str) -> String {
    std::path::Path::new(file)
        .strip_prefix(root)
        .map(|relative| relative.to_string_lossy().into_owned())
        .unwrap_or_else(|_| file.to_string())
}

/// A receipt read back: what `verify` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// An object id (checked by [`parse`]), never a revision expression.
    pub tree: Option<String>,
    /// The subject's name: the project folder's name where it was made.
    pub name: String,
    pub tree_note: Option<String>,
    pub prefix: String,
    pub excluded: Vec<String>,
    pub loop_id: String,
    pub status: String,
    pub result: String,
    /// The conditions the predicate lists as passed and as failed.
    pub passed_tests: Vec<String>,
    pub failed_tests: Vec<String>,
    pub check_timeout_secs: u64,
    pub conditions: Vec<Condition>,
}

/// One condition as the receipt records it.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Command {
        command: String,
        /// `None` for a check the loop never ran (cancelled before a Stop).
        run: Option<RecordedRun>,
    },
    Promise {
        found: Option<bool>,
    },
    Diagnostics(RecordedDiagnostics),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRun {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub output_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedDiagnostics {
    pub name: String,
    /// `project` or `touched`.
    pub scope: String,
    pub paths: Vec<String>,
    pub files: Vec<String>,
    pub no_warnings: bool,
    pub servers: BTreeMap<String, String>,
    /// Errors and warnings at the end; `None` when never evaluated.
    pub after: Option<(u64, u64)>,
    pub passed: bool,
}

impl Condition {
    pub fn name(&self) -> String {
        match self {
            Condition::Command { command, .. } => format!("check:{command}"),
            Condition::Promise { .. } => "promise".into(),
            Condition::Diagnostics(diagnostics) => diagnostics.name.clone(),
        }
    }
}

/// Whether a receipt's `projectPath` names a folder inside the tree: empty,
/// or relative with plain names only (no root, no `.` or `..`, no
/// backslash or control character). It becomes the checks' working folder.
pub fn is_safe_prefix(prefix: &str) -> bool {
    let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
    prefix.is_empty()
        || (!trimmed.is_empty()
            && !prefix.starts_with('/')
            && !prefix.chars().any(|c| c.is_control() || c == '\\')
            && trimmed
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != ".."))
}

impl Receipt {
    /// Whether the receipt's own record says its loop completed: every
    /// condition held when the loop ended (a check exited 0 in time, the
    /// promise was found, the diagnostics passed). The reasons it did not,
    /// when it says COMPLETED or PASSED but its conditions do not bear that
    /// out.
    pub fn inconsistencies(&self) -> Vec<String> {
        let mut why = Vec::new();
        let completed = self.status == "COMPLETED";
        let passed = self.result == "PASSED";
        match self.status.as_str() {
            "COMPLETED" | "FAILED" | "CANCELLED" => {}
            other => why.push(format!(
                "its loop status is {:?}, which no loop ends with",
                crate::util::text::escape_controls(other)
            )),
        }
        if completed != passed {
            why.push(format!(
                "it says {} with the result {}",
                crate::util::text::escape_controls(&self.status),
                crate::util::text::escape_controls(&self.result)
            ));
        }
        for condition in &self.conditions {
            let name = condition.name();
            let holds = condition.held();
            if (completed || passed) && !holds {
                why.push(format!(
                    "it says {} but {}",
                    if completed { "COMPLETED" } else { "PASSED" },
                    condition.why_not_held()
                ));
            }
            // Lists are compared only for a condition with a record of its
            // own: a loop that ended between Stops (a budget) lists the
            // rest by the last Stop's failures.
            let recorded = match condition {
                Condition::Command { run, .. } => run.is_some(),
                Condition::Promise { found } => found.is_some(),
                Condition::Diagnostics(recorded) => recorded.after.is_some(),
            };
            if recorded
                && (holds && self.failed_tests.contains(&name)
                    || !holds && self.passed_tests.contains(&name))
            {
                why.push(format!(
                    "it lists {} as {} while its record says it {}",
                    crate::util::text::escape_controls(&name),
                    if holds { "failed" } else { "passed" },
                    if holds { "held" } else { "did not hold" }
                ));
            }
        }
        if (completed || passed) && self.conditions.is_empty() {
            why.push("it says its loop completed but records no condition".into());
        }
        why
    }
}

impl Condition {
    /// Whether the condition held as recorded.
    pub fn held(&self) -> bool {
        match self {
            Condition::Command { run, .. } => run
                .as_ref()
                .is_some_and(|run| run.exit_code == Some(0) && !run.timed_out),
            Condition::Promise { found } => *found == Some(true),
            Condition::Diagnostics(recorded) => recorded.after.is_some() && recorded.passed,
        }
    }

    fn why_not_held(&self) -> String {
        let name = crate::util::text::escape_controls(&self.name()).into_owned();
        match self {
            Condition::Command { run: None, .. } => format!("{name} never ran"),
            Condition::Command { run: Some(run), .. } if run.timed_out => {
                format!("{name} timed out")
            }
            Condition::Command { run: Some(run), .. } => match run.exit_code {
                Some(code) => format!("{name} exited {code}"),
                None => format!("{name} was killed by a signal"),
            },
            Condition::Promise { .. } => "the promise was not found".into(),
            Condition::Diagnostics(recorded) if recorded.after.is_none() => {
                format!("{name} was never evaluated")
            }
            Condition::Diagnostics(_) => format!("{name} did not pass"),
        }
    }
}

/// Reads a statement back; an error says what is wrong with it.
pub fn parse(statement: &Value) -> Result<Receipt, String> {
    if statement["_type"] != STATEMENT_TYPE {
        return Err(format!(
            "not an in-toto Statement v1 (`_type` is {})",
            statement["_type"]
        ));
    }
    if statement["predicateType"] != PREDICATE_TYPE {
        return Err(format!(
            "not a test-result predicate (`predicateType` is {})",
            statement["predicateType"]
        ));
    }
    let subject = &statement["subject"][0];
    let detail = &statement["predicate"]["ralphHooks"];
    let text = |value: &Value| value.as_str().map(str::to_string);
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let Some(conditions) = detail["conditions"].as_array() else {
        return Err("the predicate has no `ralphHooks.conditions`".into());
    };
    let mut parsed = Vec::new();
    for condition in conditions {
        let counts = |value: &Value| Some((value["errors"].as_u64()?, value["warnings"].as_u64()?));
        let evaluated = condition["evaluated"].as_bool() != Some(false);
        parsed.push(match condition["kind"].as_str() {
            Some("command") => Condition::Command {
                command: text(&condition["command"])
                    .ok_or("a command condition without its command")?,
                run: evaluated.then(|| RecordedRun {
                    exit_code: condition["exitCode"].as_i64().map(|code| code as i32),
                    timed_out: condition["timedOut"].as_bool().unwrap_or(false),
                    output_sha256: text(&condition["output"]["digest"]["sha256"]),
                }),
            },
            Some("promise") => Condition::Promise {
                found: condition["found"].as_bool(),
            },
            Some("diagnostics") => Condition::Diagnostics(RecordedDiagnostics {
                name: text(&condition["name"]).unwrap_or_else(|| "diagnostics".into()),
                scope: text(&condition["scope"]).unwrap_or_else(|| "project".into()),
                paths: strings(&condition["paths"]),
                files: strings(&condition["files"]),
                no_warnings: condition["noWarnings"].as_bool().unwrap_or(false),
                servers: condition["servers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|server| {
                        Some((
                            text(&server["name"])?,
                            text(&server["version"]).unwrap_or_default(),
                        ))
                    })
                    .collect(),
                after: counts(&condition["after"]),
                passed: condition["passed"].as_bool().unwrap_or(false),
            }),
            other => return Err(format!("a condition of unknown kind {other:?}")),
        });
    }
    let tree = match &subject["digest"]["gitTree"] {
        Value::Null => None,
        Value::String(tree) if super::tree::is_object_id(tree) => Some(tree.clone()),
        other => {
            return Err(format!(
                "`digest.gitTree` is {}, not a git object id (40 or 64 lower-case hex digits)",
                crate::util::text::escape_controls(&other.to_string())
            ));
        }
    };
    let prefix = text(&subject["annotations"]["projectPath"]).unwrap_or_default();
    if !is_safe_prefix(&prefix) {
        return Err(format!(
            "`annotations.projectPath` is {:?}: not a folder inside the tree (a relative path without `..`)",
            crate::util::text::escape_controls(&prefix)
        ));
    }
    Ok(Receipt {
        tree,
        name: text(&subject["name"]).unwrap_or_default(),
        tree_note: text(&subject["annotations"]["treeUnavailable"]),
        prefix,
        excluded: strings(&subject["annotations"]["excluded"]),
        loop_id: text(&detail["loop"]["id"]).unwrap_or_default(),
        status: text(&detail["loop"]["status"]).unwrap_or_default(),
        result: text(&statement["predicate"]["result"]).unwrap_or_default(),
        passed_tests: strings(&statement["predicate"]["passedTests"]),
        failed_tests: strings(&statement["predicate"]["failedTests"]),
        check_timeout_secs: detail["loop"]["checkTimeoutSecs"].as_u64().unwrap_or(300),
        conditions: parsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(status: &str, result: &str, conditions: Vec<Condition>) -> Receipt {
        Receipt {
            tree: None,
            name: String::new(),
            tree_note: None,
            prefix: String::new(),
            excluded: Vec::new(),
            loop_id: "l".into(),
            status: status.into(),
            result: result.into(),
            passed_tests: Vec::new(),
            failed_tests: Vec::new(),
            check_timeout_secs: 1,
            conditions,
        }
    }

    fn check(exit: i32) -> Condition {
        Condition::Command {
            command: "c".into(),
            run: Some(RecordedRun {
                exit_code: Some(exit),
                timed_out: false,
                output_sha256: None,
            }),
        }
    }

    #[test]
    fn a_completed_receipt_must_follow_from_its_conditions() {
        assert!(
            receipt("COMPLETED", "PASSED", vec![check(0)])
                .inconsistencies()
                .is_empty()
        );
        let forged = receipt("COMPLETED", "PASSED", vec![check(3)]).inconsistencies();
        assert!(
            forged.iter().any(|why| why.contains("check:c exited 3")),
            "{forged:?}"
        );
        assert!(
            !receipt("FAILED", "PASSED", vec![check(3)])
                .inconsistencies()
                .is_empty()
        );
        assert!(
            !receipt("COMPLETED", "PASSED", vec![])
                .inconsistencies()
                .is_empty()
        );
        assert!(
            !receipt("DONE", "FAILED", vec![check(3)])
                .inconsistencies()
                .is_empty()
        );
    }

    /// A loop that ended between Stops (a budget) lists a diagnostics
    /// condition without a record of its own as passed: not a forgery.
    #[test]
    fn a_failed_receipt_lists_unrecorded_conditions_as_it_likes() {
        let mut failed = receipt(
            "FAILED",
            "FAILED",
            vec![Condition::Diagnostics(RecordedDiagnostics {
                name: "diagnostics".into(),
                scope: "touched".into(),
                paths: vec![],
                files: vec![],
                no_warnings: false,
                servers: BTreeMap::new(),
                after: None,
                passed: true,
            })],
        );
        failed.passed_tests = vec!["diagnostics".into()];
        assert!(
            failed.inconsistencies().is_empty(),
            "{:?}",
            failed.inconsistencies()
        );
        let mut listed = receipt("FAILED", "FAILED", vec![check(3)]);
        listed.passed_tests = vec!["check:c".into()];
        assert!(!listed.inconsistencies().is_empty());
    }

    #[test]
    fn a_project_path_stays_inside_the_tree() {
        for good in ["", "app/", "a/b", "a/b/"] {
            assert!(is_safe_prefix(good), "{good}");
        }
        for bad in ["/abs/", "../", "a/../b", "./", "a//b", "a\\b", "a/\u{1b}/"] {
            assert!(!is_safe_prefix(bad), "{bad}");
        }
    }
}
