//! The schema of every orchestrator file, transcribed from seeds 001 (file
//! storage: session.json, state.json, the request/task/subtask contracts,
//! knowledge.yaml) and 003 (the flat `contracts/<taskId>.<kind>.yaml`
//! formats), and the checks across fields that the seeds imply.
//!
//! Where a seed gives a table of required fields, those are required; where
//! it gives only an example, the fields every example carries are required,
//! except references, dates and notes that examples show on some records
//! only (`note`, `refs`, `learned_from`, a decision's `created_at`). The
//! header (`version`, `created_at`, `created_by`) is required everywhere:
//! every example of both seeds carries it.

use std::collections::HashMap;

use super::rules::{Field, IdKind, Ty, Violation, join, optional, required};
use super::tree::{Node, Pos};
use super::{Kind, Layout, PathIds};

// ------------------------------------------------------------ shared parts

const STATUS_SESSION: &[&str] = &["active", "completed", "stopped"];
const STATUS_TASK: &[&str] = &["pending", "in_progress", "completed"];
const GLOBAL_PHASE: &[&str] = &["global_discovery", "task_loop", "complete"];
const SUBTASK_PHASE: &[&str] = &["test_first", "implementation", "verification", "complete"];
const GATE_STATE: &[&str] = &["pending", "passed", "failed"];
const FILE_REF_STATUS: &[&str] = &["exists", "to_create", "to_modify"];
const TEST_CATEGORY: &[&str] = &["happy_path", "error_case", "edge_case"];
const TEST_RESULT: &[&str] = &["pass", "fail"];
const FAILURE_CATEGORY: &[&str] = &["implementation_error", "design_violation", "test_error"];
const ACTION: &[&str] = &["complete", "retry_implementation", "retry_design"];

const TEXT_LIST: Ty = Ty::List(&Ty::Text);

const PROJECT: &[Field] = &[
    required("path", Ty::Text),
    required("name", Ty::Text),
    required("hash", Ty::Id(IdKind::Hash)),
];
const MANIFEST: &[Field] = &[
    required("claude_md", Ty::OrNull(&Ty::Text)),
    required("agents_md", Ty::OrNull(&Ty::Text)),
];
const FILE_REF: &[Field] = &[
    required("entity", Ty::Text),
    required("path", Ty::Text),
    required("status", Ty::OneOf(FILE_REF_STATUS)),
];
const FILE_REFS: Ty = Ty::List(&Ty::Object(FILE_REF));
const INVARIANT: &[Field] = &[required("id", Ty::Text), required("rule", Ty::Text)];
const INTERFACE_FIELD: &[Field] = &[required("name", Ty::Text), required("type", Ty::Text)];
const INTERFACE_TYPE: &[Field] = &[
    required("type", Ty::Text),
    optional("fields", Ty::List(&Ty::Object(INTERFACE_FIELD))),
];
const INTERFACE: &[Field] = &[
    required("name", Ty::Text),
    required("input", Ty::Object(INTERFACE_TYPE)),
    required("output", Ty::Object(INTERFACE_TYPE)),
    required("contract", Ty::Text),
];
const BOUNDARY: &[Field] = &[
    required("from", Ty::Text),
    required("to", Ty::Text),
    required("allowed", Ty::Bool),
    optional("note", Ty::Text),
];
const LAYER_ASSIGNMENT: &[Field] = &[required("component", Ty::Text), required("layer", Ty::Text)];
const TEST_CASE: &[Field] = &[
    required("id", Ty::Text),
    required("name", Ty::Text),
    required("target", Ty::Text),
    required("given", Ty::Text),
    required("when", Ty::Text),
    required("then", Ty::Text),
    required("category", Ty::OneOf(TEST_CATEGORY)),
];
const EXECUTION: &[Field] = &[
    required("command", Ty::Text),
    required("timestamp", Ty::Timestamp),
    required("result", Ty::OneOf(TEST_RESULT)),
];
const SUMMARY: &[Field] = &[
    required("total", Ty::Count),
    required("passed", Ty::Count),
    required("failed", Ty::Count),
    required("skipped", Ty::Count),
];
const FAILED_TEST: &[Field] = &[
    required("id", Ty::Text),
    required("name", Ty::Text),
    required("reason", Ty::Text),
    required("category", Ty::OneOf(FAILURE_CATEGORY)),
];
const RECOMMENDATION: &[Field] = &[
    required("action", Ty::OneOf(ACTION)),
    required("reason", Ty::Text),
];

// ------------------------------------------------------------ seed 001

const SESSION: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("project", Ty::Object(PROJECT)),
    required("status", Ty::OneOf(STATUS_SESSION)),
    required("current_task", Ty::OrNull(&Ty::Id(IdKind::Task))),
    required("created_at", Ty::Timestamp),
    required("updated_at", Ty::Timestamp),
    required("manifest", Ty::Object(MANIFEST)),
];

const SUBTASK_STATE: &[Field] = &[
    required("name", Ty::Text),
    required("status", Ty::OneOf(STATUS_TASK)),
    required("phase", Ty::OneOf(SUBTASK_PHASE)),
    required(
        "gates",
        Ty::Map {
            key: None,
            key_hint: "<gate, e.g. GATE-1>",
            value: &Ty::OneOf(GATE_STATE),
        },
    ),
];
const TASK_STATE: &[Field] = &[
    required("name", Ty::Text),
    required("status", Ty::OneOf(STATUS_TASK)),
    required("current_subtask", Ty::OrNull(&Ty::Id(IdKind::Subtask))),
    required(
        "subtasks",
        Ty::Map {
            key: Some(IdKind::Subtask),
            key_hint: "T<n>-S<m>",
            value: &Ty::Object(SUBTASK_STATE),
        },
    ),
    required("subtask_order", Ty::List(&Ty::Id(IdKind::Subtask))),
    optional("created_at", Ty::Timestamp),
    optional("updated_at", Ty::Timestamp),
];
const REQUEST_STATE: &[Field] = &[
    required("id", Ty::Id(IdKind::Request)),
    required("original_request", Ty::Text),
    required("status", Ty::OneOf(STATUS_SESSION)),
    required("current_task", Ty::OrNull(&Ty::Id(IdKind::Task))),
    required("global_phase", Ty::OneOf(GLOBAL_PHASE)),
];
const STATE: &[Field] = &[
    required("version", Ty::Exactly(2)),
    required("request", Ty::Object(REQUEST_STATE)),
    required(
        "tasks",
        Ty::Map {
            key: Some(IdKind::Task),
            key_hint: "T<n>",
            value: &Ty::Object(TASK_STATE),
        },
    ),
    required("task_order", Ty::List(&Ty::Id(IdKind::Task))),
];

const EXPLORED_FILE: &[Field] = &[required("path", Ty::Text), required("summary", Ty::Text)];
const EXPLORED: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("project_manifest", Ty::Object(MANIFEST)),
    required("explored_files", Ty::List(&Ty::Object(EXPLORED_FILE))),
    required(
        "directory_structure",
        Ty::Map {
            key: None,
            key_hint: "<directory>",
            value: &Ty::Text,
        },
    ),
];

const BREAKDOWN_SUBTASK: &[Field] = &[
    required("id", Ty::Id(IdKind::Subtask)),
    required("name", Ty::Text),
    required("description", Ty::Text),
];
const BREAKDOWN_TASK: &[Field] = &[
    required("id", Ty::Id(IdKind::Task)),
    required("name", Ty::Text),
    required("objective", Ty::Text),
    required("subtasks", Ty::List(&Ty::Object(BREAKDOWN_SUBTASK))),
];
const TASK_BREAKDOWN: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("original_request", Ty::Text),
    required("objective", Ty::Text),
    required("tasks", Ty::List(&Ty::Object(BREAKDOWN_TASK))),
    required("assumptions", TEXT_LIST),
    required("task_order", Ty::List(&Ty::Id(IdKind::Task))),
];

const BRIEF_SUBTASK: &[Field] = &[
    required("id", Ty::Id(IdKind::Subtask)),
    required("name", Ty::Text),
];
const DESIGN_BRIEF: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("task_name", Ty::Text),
    required("objective", Ty::Text),
    required("subtasks", Ty::List(&Ty::Object(BRIEF_SUBTASK))),
    required("completion_criteria", TEXT_LIST),
    required("scope_in", TEXT_LIST),
    required("scope_out", TEXT_LIST),
    required("file_refs", FILE_REFS),
];
const DESIGN_CONTRACT: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("task_name", Ty::Text),
    required("invariants", Ty::List(&Ty::Object(INVARIANT))),
    required("interfaces", Ty::List(&Ty::Object(INTERFACE))),
    required("boundaries", Ty::List(&Ty::Object(BOUNDARY))),
    required("layer_assignments", Ty::List(&Ty::Object(LAYER_ASSIGNMENT))),
    required("file_refs", FILE_REFS),
];
const TEST_CONTRACT: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("subtask_id", Ty::Id(IdKind::Subtask)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("subtask_name", Ty::Text),
    required("test_cases", Ty::List(&Ty::Object(TEST_CASE))),
    required("coverage_targets", TEXT_LIST),
    required("test_file_path", Ty::Text),
];
const TEST_RESULT_FILE: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("request_id", Ty::Id(IdKind::Request)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("subtask_id", Ty::Id(IdKind::Subtask)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("execution", Ty::Object(EXECUTION)),
    required("summary", Ty::Object(SUMMARY)),
    required("failed_tests", Ty::List(&Ty::Object(FAILED_TEST))),
    required("recommendation", Ty::Object(RECOMMENDATION)),
];

const DECISION: &[Field] = &[
    required("id", Ty::Text),
    required("topic", Ty::Text),
    required("decision", Ty::Text),
    required("rationale", Ty::Text),
    optional("refs", TEXT_LIST),
    optional("created_at", Ty::Timestamp),
];
const PITFALL: &[Field] = &[
    required("id", Ty::Text),
    required("description", Ty::Text),
    required("reason", Ty::Text),
    optional("learned_from", Ty::Text),
];
const KNOWLEDGE: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("project", Ty::Object(PROJECT)),
    required(
        "patterns",
        Ty::Map {
            key: None,
            key_hint: "<pattern name>",
            value: &Ty::TextOrTextMap,
        },
    ),
    required("decisions", Ty::List(&Ty::Object(DECISION))),
    required("pitfalls", Ty::List(&Ty::Object(PITFALL))),
    required("updated_at", Ty::Timestamp),
];

// ------------------------------------------------------------ seed 003

const FLAT_PRELIMINARY_DESIGN_BRIEF: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("task_name", Ty::Text),
    required("objective", Ty::Text),
    required("assumptions", Ty::NonEmptyList(&Ty::Text)),
    required("completion_criteria", TEXT_LIST),
    required("scope_in", TEXT_LIST),
    required("scope_out", TEXT_LIST),
    optional("dependencies", TEXT_LIST),
];
const FLAT_DESIGN_BRIEF: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("task_name", Ty::Text),
    required("objective", Ty::Text),
    required("completion_criteria", TEXT_LIST),
    required("scope_in", TEXT_LIST),
    required("scope_out", TEXT_LIST),
    required("file_refs", FILE_REFS),
];
const FLAT_DESIGN_CONTRACT: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    optional("task_name", Ty::Text),
    required("invariants", Ty::List(&Ty::Object(INVARIANT))),
    required("interfaces", Ty::List(&Ty::Object(INTERFACE))),
    required("boundaries", Ty::List(&Ty::Object(BOUNDARY))),
    optional("layer_assignments", Ty::List(&Ty::Object(LAYER_ASSIGNMENT))),
    required("file_refs", FILE_REFS),
];
const FLAT_TEST_CONTRACT: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("task_name", Ty::Text),
    required("test_cases", Ty::List(&Ty::Object(TEST_CASE))),
    required("coverage_targets", TEXT_LIST),
    required("file_refs", FILE_REFS),
];
const FLAT_TEST_RESULT: &[Field] = &[
    required("version", Ty::Exactly(1)),
    required("task_id", Ty::Id(IdKind::Task)),
    required("created_at", Ty::Timestamp),
    required("created_by", Ty::Text),
    required("execution", Ty::Object(EXECUTION)),
    required("summary", Ty::Object(SUMMARY)),
    required("failed_tests", Ty::List(&Ty::Object(FAILED_TEST))),
    required("recommendation", Ty::Object(RECOMMENDATION)),
];

/// The fields of `kind` in `layout`; `None` where the seeds define no such file.
pub fn fields(kind: Kind, layout: Layout) -> Option<&'static [Field]> {
    Some(match (layout, kind) {
        (Layout::Storage, Kind::Session) => SESSION,
        (Layout::Storage, Kind::State) => STATE,
        (Layout::Storage, Kind::Knowledge) => KNOWLEDGE,
        (Layout::Storage, Kind::Explored) => EXPLORED,
        (Layout::Storage, Kind::TaskBreakdown) => TASK_BREAKDOWN,
        (Layout::Storage, Kind::DesignBrief) => DESIGN_BRIEF,
        (Layout::Storage, Kind::DesignContract) => DESIGN_CONTRACT,
        (Layout::Storage, Kind::TestContract) => TEST_CONTRACT,
        (Layout::Storage, Kind::TestResult) => TEST_RESULT_FILE,
        (Layout::Flat, Kind::PreliminaryDesignBrief) => FLAT_PRELIMINARY_DESIGN_BRIEF,
        (Layout::Flat, Kind::DesignBrief) => FLAT_DESIGN_BRIEF,
        (Layout::Flat, Kind::DesignContract) => FLAT_DESIGN_CONTRACT,
        (Layout::Flat, Kind::TestContract) => FLAT_TEST_CONTRACT,
        (Layout::Flat, Kind::TestResult) => FLAT_TEST_RESULT,
        _ => return None,
    })
}

// ------------------------------------------------------------ cross-field checks

/// The checks across fields and against the file's path. They run after the
/// field checks and skip values of the wrong type (already reported).
pub fn cross_check(
    kind: Kind,
    layout: Layout,
    root: &Node,
    ids: &PathIds,
    out: &mut Vec<Violation>,
) {
    match kind {
        Kind::Session => check_hash_dir(root, ids, "session", out),
        Kind::Knowledge => {
            check_hash_dir(root, ids, "knowledge", out);
            unique_ids(root, "decisions", out);
            unique_ids(root, "pitfalls", out);
        }
        Kind::State => check_state(root, out),
        Kind::TaskBreakdown => check_breakdown(root, out),
        Kind::DesignBrief => {
            for (index, subtask) in seq(root, "subtasks").iter().enumerate() {
                belongs_to_task(
                    subtask.get("id"),
                    root.get("task_id"),
                    &format!("subtasks[{index}].id"),
                    out,
                );
            }
            unique_ids(root, "subtasks", out);
        }
        Kind::DesignContract => unique_ids(root, "invariants", out),
        Kind::TestContract => {
            belongs_to_task(
                root.get("subtask_id"),
                root.get("task_id"),
                "subtask_id",
                out,
            );
            unique_ids(root, "test_cases", out);
        }
        Kind::TestResult => {
            belongs_to_task(
                root.get("subtask_id"),
                root.get("task_id"),
                "subtask_id",
                out,
            );
            check_test_result(root, out);
            unique_ids(root, "failed_tests", out);
        }
        Kind::Explored | Kind::PreliminaryDesignBrief => {}
    }
    check_path_ids(root, layout, ids, out);
}

fn seq<'n>(node: &'n Node, key: &str) -> &'n [Node] {
    node.get(key).map(Node::as_seq).unwrap_or(&[])
}

/// Whether `node` is present and a list (membership checks against a
/// missing or mistyped list would only repeat the type error).
fn is_list(node: Option<&Node>) -> bool {
    node.is_some_and(|node| matches!(node.value, super::tree::Value::Seq(_)))
}

fn str_of(node: Option<&Node>) -> Option<&str> {
    node.and_then(Node::as_str)
}

/// `T1-S2` belongs to `T1`.
pub fn subtask_of(subtask: &str, task: &str) -> bool {
    subtask
        .strip_prefix(task)
        .is_some_and(|rest| rest.starts_with("-S"))
}

fn belongs_to_task(
    subtask: Option<&Node>,
    task: Option<&Node>,
    path: &str,
    out: &mut Vec<Violation>,
) {
    let (Some(subtask_node), Some(task)) = (subtask, str_of(task)) else {
        return;
    };
    let Some(subtask) = subtask_node.as_str() else {
        return;
    };
    if IdKind::Subtask.matches(subtask) && IdKind::Task.matches(task) && !subtask_of(subtask, task)
    {
        out.push(Violation::at(
            subtask_node.pos,
            path,
            format!("{subtask:?} does not belong to task {task:?} (expected {task}-S<n>)"),
        ));
    }
}

/// Ids of the records in `root.<list>` are unique.
fn unique_ids(root: &Node, list: &str, out: &mut Vec<Violation>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, item) in seq(root, list).iter().enumerate() {
        let Some(id_node) = item.get("id") else {
            continue;
        };
        let Some(id) = id_node.as_str() else {
            continue;
        };
        if let Some(first_line) = seen.get(id) {
            out.push(Violation::at(
                id_node.pos,
                &format!("{list}[{index}].id"),
                format!("duplicate id {id:?} (first at line {first_line})"),
            ));
        } else {
            seen.insert(id, id_node.pos.line);
        }
    }
}

/// An order list names each entry once.
fn order_without_duplicates(order: &[Node], path: &str, out: &mut Vec<Violation>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, item) in order.iter().enumerate() {
        let Some(id) = item.as_str() else { continue };
        if let Some(first_line) = seen.get(id) {
            out.push(Violation::at(
                item.pos,
                &format!("{path}[{index}]"),
                format!("{id:?} is listed twice (first at line {first_line})"),
            ));
        } else {
            seen.insert(id, item.pos.line);
        }
    }
}

fn check_state(root: &Node, out: &mut Vec<Violation>) {
    let tasks = root.get("tasks");
    let task_order: Vec<&str> = seq(root, "task_order")
        .iter()
        .filter_map(Node::as_str)
        .collect();
    order_without_duplicates(seq(root, "task_order"), "task_order", out);
    if let Some(current) = root.at(&["request", "current_task"])
        && let Some(current_id) = current.as_str()
        && tasks.is_some_and(|tasks| tasks.get(current_id).is_none())
        && IdKind::Task.matches(current_id)
    {
        out.push(Violation::at(
            current.pos,
            "request.current_task",
            format!("{current_id:?} is not in tasks"),
        ));
    }
    let Some(tasks) = tasks else { return };
    for task_entry in tasks.entries() {
        let task_id = task_entry.key.as_str();
        let task = &task_entry.value;
        let task_path = join("tasks", task_id);
        if is_list(root.get("task_order")) && !task_order.contains(&task_id) {
            out.push(Violation::at(
                task_entry.key_pos,
                &task_path,
                format!("task {task_id:?} is missing from task_order"),
            ));
        }
        let subtasks = task.get("subtasks");
        let subtask_order_nodes = seq(task, "subtask_order");
        let subtask_order: Vec<&str> = subtask_order_nodes
            .iter()
            .filter_map(Node::as_str)
            .collect();
        order_without_duplicates(subtask_order_nodes, &join(&task_path, "subtask_order"), out);
        for (index, item) in subtask_order_nodes.iter().enumerate() {
            if let Some(id) = item.as_str()
                && IdKind::Subtask.matches(id)
                && IdKind::Task.matches(task_id)
                && !subtask_of(id, task_id)
            {
                out.push(Violation::at(
                    item.pos,
                    &format!("{task_path}.subtask_order[{index}]"),
                    format!("{id:?} does not belong to task {task_id:?} (expected {task_id}-S<n>)"),
                ));
            }
        }
        for subtask_entry in subtasks.map(Node::entries).unwrap_or(&[]) {
            let subtask_id = subtask_entry.key.as_str();
            let subtask_path = join(&join(&task_path, "subtasks"), subtask_id);
            if IdKind::Subtask.matches(subtask_id)
                && IdKind::Task.matches(task_id)
                && !subtask_of(subtask_id, task_id)
            {
                out.push(Violation::at(
                    subtask_entry.key_pos,
                    &subtask_path,
                    format!(
                        "subtask {subtask_id:?} does not belong to task {task_id:?} (expected {task_id}-S<n>)"
                    ),
                ));
            }
            if is_list(task.get("subtask_order")) && !subtask_order.contains(&subtask_id) {
                out.push(Violation::at(
                    subtask_entry.key_pos,
                    &subtask_path,
                    format!("subtask {subtask_id:?} is missing from {task_path}.subtask_order"),
                ));
            }
        }
        if let Some(current) = task.get("current_subtask")
            && let Some(current_id) = current.as_str()
            && IdKind::Subtask.matches(current_id)
            && subtasks.is_some_and(|subtasks| subtasks.get(current_id).is_none())
        {
            out.push(Violation::at(
                current.pos,
                &join(&task_path, "current_subtask"),
                format!("{current_id:?} is not in {task_path}.subtasks"),
            ));
        }
    }
}

fn check_breakdown(root: &Node, out: &mut Vec<Violation>) {
    unique_ids(root, "tasks", out);
    let order_nodes = seq(root, "task_order");
    order_without_duplicates(order_nodes, "task_order", out);
    let order: Vec<&str> = order_nodes.iter().filter_map(Node::as_str).collect();
    let task_ids: Vec<&str> = seq(root, "tasks")
        .iter()
        .filter_map(|task| str_of(task.get("id")))
        .collect();
    for (index, task) in seq(root, "tasks").iter().enumerate() {
        let Some(id_node) = task.get("id") else {
            continue;
        };
        let task_path = format!("tasks[{index}]");
        if let Some(id) = id_node.as_str()
            && is_list(root.get("task_order"))
            && !order.contains(&id)
        {
            out.push(Violation::at(
                id_node.pos,
                &format!("{task_path}.id"),
                format!("task {id:?} is missing from task_order"),
            ));
        }
        for (sub_index, subtask) in seq(task, "subtasks").iter().enumerate() {
            belongs_to_task(
                subtask.get("id"),
                Some(id_node),
                &format!("{task_path}.subtasks[{sub_index}].id"),
                out,
            );
        }
    }
    // Subtask ids are unique across the whole breakdown.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, task) in seq(root, "tasks").iter().enumerate() {
        for (sub_index, subtask) in seq(task, "subtasks").iter().enumerate() {
            let Some(id_node) = subtask.get("id") else {
                continue;
            };
            let Some(id) = id_node.as_str() else { continue };
            if let Some(first_line) = seen.get(id) {
                out.push(Violation::at(
                    id_node.pos,
                    &format!("tasks[{index}].subtasks[{sub_index}].id"),
                    format!("duplicate id {id:?} (first at line {first_line})"),
                ));
            } else {
                seen.insert(id, id_node.pos.line);
            }
        }
    }
    for (index, item) in order_nodes.iter().enumerate() {
        if let Some(id) = item.as_str()
            && is_list(root.get("tasks"))
            && !task_ids.contains(&id)
        {
            out.push(Violation::at(
                item.pos,
                &format!("task_order[{index}]"),
                format!("{id:?} is not one of the tasks"),
            ));
        }
    }
}

fn check_test_result(root: &Node, out: &mut Vec<Violation>) {
    let count = |key: &str| {
        root.at(&["summary", key])
            .and_then(Node::as_int)
            .filter(|n| *n >= 0)
    };
    let (Some(total), Some(passed), Some(failed), Some(skipped)) = (
        count("total"),
        count("passed"),
        count("failed"),
        count("skipped"),
    ) else {
        return;
    };
    let summary_pos = |key: &str| {
        root.at(&["summary", key])
            .map(|n| n.pos)
            .unwrap_or(Pos::START)
    };
    if passed + failed + skipped != total {
        out.push(Violation::at(
            summary_pos("total"),
            "summary.total",
            format!(
                "{total} is not passed + failed + skipped ({passed} + {failed} + {skipped} = {})",
                passed + failed + skipped
            ),
        ));
    }
    if let Some(Ok(n_listed)) = root
        .get("failed_tests")
        .filter(|node| is_list(Some(node)))
        .map(|node| i64::try_from(node.as_seq().len()))
        && n_listed != failed
    {
        out.push(Violation::at(
            summary_pos("failed"),
            "summary.failed",
            format!("{failed} does not match the {n_listed} entries of failed_tests"),
        ));
    }
    let result_node = root.at(&["execution", "result"]);
    match str_of(result_node) {
        Some("pass") if failed > 0 => out.push(Violation::at(
            result_node.map(|n| n.pos).unwrap_or(Pos::START),
            "execution.result",
            format!("\"pass\" but summary.failed is {failed}"),
        )),
        Some("fail") if failed == 0 => out.push(Violation::at(
            result_node.map(|n| n.pos).unwrap_or(Pos::START),
            "execution.result",
            "\"fail\" but summary.failed is 0",
        )),
        _ => {}
    }
    let action_node = root.at(&["recommendation", "action"]);
    if str_of(action_node) == Some("complete") && str_of(result_node) == Some("fail") {
        out.push(Violation::at(
            action_node.map(|n| n.pos).unwrap_or(Pos::START),
            "recommendation.action",
            "\"complete\" contradicts execution.result \"fail\"",
        ));
    }
}

/// `project.hash` names the directory the file sits in.
fn check_hash_dir(root: &Node, ids: &PathIds, what: &str, out: &mut Vec<Violation>) {
    let (Some(dir), Some(node)) = (&ids.hash, root.at(&["project", "hash"])) else {
        return;
    };
    if let Some(hash) = node.as_str()
        && hash != dir
    {
        out.push(Violation::at(
            node.pos,
            "project.hash",
            format!("{hash:?} does not match the {what} directory {dir:?} in the file's path"),
        ));
    }
}

/// The ids inside a contract match the ids its path or name carries.
fn check_path_ids(root: &Node, layout: Layout, ids: &PathIds, out: &mut Vec<Violation>) {
    let checks = [
        ("request_id", &ids.request, "request directory"),
        ("task_id", &ids.task, "task directory"),
        ("subtask_id", &ids.subtask, "subtask directory"),
    ];
    for (key, expected, where_) in checks {
        let (Some(expected), Some(node)) = (expected, root.get(key)) else {
            continue;
        };
        let Some(actual) = node.as_str() else {
            continue;
        };
        if actual != expected {
            let message = match layout {
                Layout::Storage => {
                    format!(
                        "{actual:?} does not match the {where_} {expected:?} in the file's path"
                    )
                }
                Layout::Flat => {
                    format!("{actual:?} does not match {expected:?} in the file name")
                }
            };
            out.push(Violation::at(node.pos, key, message));
        }
    }
}
