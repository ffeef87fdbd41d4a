//! Orchestrator file schemas: every example of seeds 001 and 003 validates
//! as written, and each kind of mutation (unknown field, missing required
//! field, wrong enum, wrong type, broken cross-reference, broken syntax)
//! fails with its exact message at its exact line and column.

use std::path::{Path, PathBuf};

use ralph_hooks::orchestrator::schema::{self, Layout};

use crate::util::{self, TempDir};

fn contracts_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("contracts")
}

/// Short names in the table below: `S/` is seed 001's session directory,
/// `K/` its knowledge directory, `F/` seed 003's flat contracts directory.
fn fixture(short: &str) -> PathBuf {
    let relative = if let Some(rest) = short.strip_prefix("S/") {
        format!("seed-001/.claude/orchestrator/sessions/a1b2c3d4/{rest}")
    } else if let Some(rest) = short.strip_prefix("K/") {
        format!("seed-001/.claude/orchestrator/knowledge/a1b2c3d4/{rest}")
    } else if let Some(rest) = short.strip_prefix("F/") {
        format!("seed-003/contracts/{rest}")
    } else {
        panic!("unknown fixture prefix in {short}")
    };
    contracts_root().join(relative)
}

/// Validates `text` as the file at `path` (recognised by its place), as
/// `line:col: message` lines.
fn violations_at(path: &Path, text: &str) -> Vec<String> {
    let role = schema::recognize(path, Path::new("/nonexistent-state-root"))
        .unwrap_or_else(|| panic!("{} is not recognised by its place", path.display()));
    schema::validate(&role, text)
        .iter()
        .map(|v| format!("{}:{}: {}", v.pos.line, v.pos.col, v.message))
        .collect()
}

#[test]
fn every_seed_example_validates_as_written() {
    let files = util::files_under(&contracts_root());
    // Nine files of seed 001 and five of seed 003: none may be skipped.
    assert_eq!(files.len(), 14, "{files:?}");
    for path in &files {
        let role = schema::recognize(path, Path::new("/nonexistent-state-root"))
            .unwrap_or_else(|| panic!("{} is not recognised by its place", path.display()));
        let seed_003 = path.to_string_lossy().contains("/seed-003/");
        assert_eq!(role.layout == Layout::Flat, seed_003, "{}", path.display());
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            schema::validate(&role, &text),
            [],
            "{} must validate as the seed wrote it",
            path.display()
        );
    }
    let temp = TempDir::new("validate-seeds");
    let output = util::command("ralph-hooks", temp.path())
        .arg("validate")
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "ralph-hooks: 14 file(s) valid\n"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 400, ..Default::default() })]

    /// Any text at all is either parsed or refused with a position.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        for name in ["state.json", "test-result.yaml"] {
            let role = schema::recognize_by_name(Path::new(name)).unwrap();
            for violation in schema::validate(&role, &text) {
                proptest::prop_assert!(violation.pos.line >= 1 && violation.pos.col >= 1);
            }
        }
    }

    /// Whatever an agent writes, the check answers with violations and
    /// never panics (the release build aborts on a panic): splice random
    /// YAML/JSON punctuation into every seed example and validate.
    #[test]
    fn damaged_files_never_panic(
        at in 0usize..4000,
        splice in "[\\[\\]{}:,\"'#&*!|>~ \n\t\\-a-zT0-9]{0,12}",
        cut in 0usize..6,
    ) {
        for path in util::files_under(&contracts_root()) {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let damaged = format!("{}{splice}{}", &text[..at], &text[end..]);
            let role = schema::recognize(&path, Path::new("/nonexistent-state-root")).unwrap();
            for violation in schema::validate(&role, &damaged) {
                proptest::prop_assert!(violation.pos.line >= 1 && violation.pos.col >= 1);
                proptest::prop_assert!(violation.pos.line <= damaged.lines().count().max(1) + 1);
            }
        }
    }
}

struct Mutation {
    file: &'static str,
    find: &'static str,
    replace: &'static str,
    expect: &'static [&'static str],
}

#[test]
fn mutations_fail_with_exact_messages_and_positions() {
    let mut failures = Vec::new();
    for mutation in MUTATIONS {
        let path = fixture(mutation.file);
        let original = std::fs::read_to_string(&path).unwrap();
        assert!(
            original.contains(mutation.find),
            "{}: {:?} not found",
            mutation.file,
            mutation.find
        );
        let mutated = original.replacen(mutation.find, mutation.replace, 1);
        let actual = violations_at(&path, &mutated);
        if actual != mutation.expect {
            failures.push(format!(
                "{} ({:?} -> {:?}):\n  expected {:#?}\n  got {:#?}",
                mutation.file, mutation.find, mutation.replace, mutation.expect, actual
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_schema_has_each_kind_of_mutation() {
    // Each fixture is mutated at least four ways (unknown, missing, type or
    // enum, cross-reference), so no schema goes untested.
    for path in util::files_under(&contracts_root()) {
        let n = MUTATIONS.iter().filter(|m| fixture(m.file) == path).count();
        assert!(n >= 4, "{} has only {n} mutations", path.display());
    }
}

#[test]
fn the_cli_prints_file_line_col_and_exits_1() {
    let temp = TempDir::new("validate-cli");
    let dir = temp.path().join("contracts");
    std::fs::create_dir_all(&dir).unwrap();
    let original = std::fs::read_to_string(fixture("F/T1.test-result.yaml")).unwrap();
    std::fs::write(
        dir.join("T1.test-result.yaml"),
        original.replace("result: pass", "result: passed"),
    )
    .unwrap();
    std::fs::write(dir.join("notes.yaml"), "a: 1\n").unwrap();
    let output = util::command("ralph-hooks", temp.path())
        .args([
            "validate",
            "contracts/T1.test-result.yaml",
            "contracts/notes.yaml",
            "contracts/missing.test-result.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(
        lines[0],
        "contracts/T1.test-result.yaml:9:11: execution.result: \"passed\" is not one of: pass, fail"
    );
    assert!(
        lines[1].starts_with("contracts/notes.yaml:1:1: not an orchestrator file: its name does not tell which schema applies"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("contracts/missing.test-result.yaml:1:1: cannot read the file: "),
        "{}",
        lines[2]
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "ralph-hooks: 3 violation(s) in 3 of 3 file(s); regenerate them following their schema (`ralph-hooks validate --schema <name>` prints it)\n"
    );

    let output = util::command("ralph-hooks", temp.path())
        .args(["validate", "--json", "contracts/T1.test-result.yaml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "valid": false,
            "n_files": 1,
            "n_violations": 1,
            "files": [{
                "file": "contracts/T1.test-result.yaml",
                "schema": "seed 003 <taskId>.test-result.yaml",
                "valid": false,
                "violations": [{"line": 9, "column": 11, "message": "execution.result: \"passed\" is not one of: pass, fail"}],
            }],
        })
    );
}

#[test]
fn the_cli_prints_a_schema_outline() {
    let temp = TempDir::new("validate-schema");
    let output = util::command("ralph-hooks", temp.path())
        .args(["validate", "--schema", "test-result"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("# seed 001 test-result.yaml\n# seed 001 (orchestrator file storage), test-result.yaml at sessions/<projectHash>/contracts/<requestId>/<taskId>/<subtaskId>/test-result.yaml\nversion: 1\nrequest_id: R<n>\n"), "{stdout}");
    assert!(stdout.contains("  result: pass | fail\n"), "{stdout}");
    assert!(
        stdout.contains("    category: implementation_error | design_violation | test_error\n"),
        "{stdout}"
    );
}

#[test]
fn the_cli_can_force_a_schema() {
    let temp = TempDir::new("validate-as");
    let original =
        std::fs::read_to_string(fixture("S/contracts/R1/T1/T1-S2/test-result.yaml")).unwrap();
    std::fs::write(temp.path().join("draft.yaml"), original).unwrap();
    let output = util::command("ralph-hooks", temp.path())
        .args(["validate", "--as", "test-result.yaml", "draft.yaml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = util::command("ralph-hooks", temp.path())
        .args(["validate", "--as", "T1.test-result.yaml", "draft.yaml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains("draft.yaml:2:1: request_id: unknown field")
    );
}

const MUTATIONS: &[Mutation] = &[
    Mutation {
        file: "S/session.json",
        find: "  \"version\": 1,\n",
        replace: "  \"version\": 1,\n  \"owner\": \"me\",\n",
        expect: &[
            "3:3: owner: unknown field (the schema allows only version, project, status, current_task, created_at, updated_at, manifest)",
        ],
    },
    Mutation {
        file: "S/session.json",
        find: "  \"current_task\": \"T1\",\n",
        replace: "",
        expect: &["1:1: missing required field \"current_task\""],
    },
    Mutation {
        file: "S/session.json",
        find: "\"status\": \"active\"",
        replace: "\"status\": \"paused\"",
        expect: &["8:13: status: \"paused\" is not one of: active, completed, stopped"],
    },
    Mutation {
        file: "S/session.json",
        find: "\"version\": 1",
        replace: "\"version\": \"1\"",
        expect: &["2:14: version: expected 1, got a string (\"1\")"],
    },
    Mutation {
        file: "S/session.json",
        find: "\"hash\": \"a1b2c3d4\"",
        replace: "\"hash\": \"ffffffff\"",
        expect: &[
            "6:13: project.hash: \"ffffffff\" does not match the session directory \"a1b2c3d4\" in the file's path",
        ],
    },
    Mutation {
        file: "S/state.json",
        find: "\"phase\": \"complete\",",
        replace: "\"phase\": \"complete\",\n          \"owner\": \"x\",",
        expect: &[
            "20:11: tasks.T1.subtasks.T1-S1.owner: unknown field (the schema allows only name, status, phase, gates)",
        ],
    },
    Mutation {
        file: "S/state.json",
        find: "\"current_task\": \"T1\",\n    \"global_phase\": \"task_loop\"",
        replace: "\"current_task\": \"T1\"",
        expect: &["3:14: request: missing required field \"global_phase\""],
    },
    Mutation {
        file: "S/state.json",
        find: "\"GATE-2\": \"pending\"",
        replace: "\"GATE-2\": \"skipped\"",
        expect: &[
            "31:23: tasks.T1.subtasks.T1-S2.gates.GATE-2: \"skipped\" is not one of: pending, passed, failed",
        ],
    },
    Mutation {
        file: "S/state.json",
        find: "\"task_order\": [\"T1\", \"T2\"]",
        replace: "\"task_order\": \"T1\"",
        expect: &["42:17: task_order: expected a list, got a string (\"T1\")"],
    },
    Mutation {
        file: "S/state.json",
        find: "\"current_subtask\": \"T1-S2\"",
        replace: "\"current_subtask\": \"T1-S9\"",
        expect: &["14:26: tasks.T1.current_subtask: \"T1-S9\" is not in tasks.T1.subtasks"],
    },
    Mutation {
        file: "S/state.json",
        find: "\"subtask_order\": [\"T1-S1\", \"T1-S2\", \"T1-S3\"]",
        replace: "\"subtask_order\": [\"T1-S1\", \"T1-S3\"]",
        expect: &[
            "25:9: tasks.T1.subtasks.T1-S2: subtask \"T1-S2\" is missing from tasks.T1.subtask_order",
        ],
    },
    Mutation {
        file: "S/state.json",
        find: "\"task_order\": [\"T1\", \"T2\"]",
        replace: "\"task_order\": [\"T2\"]",
        expect: &["11:5: tasks.T1: task \"T1\" is missing from task_order"],
    },
    Mutation {
        file: "S/state.json",
        find: "\"T1-S1\": {",
        replace: "\"T2-S1\": {",
        expect: &[
            "16:9: tasks.T1.subtasks.T2-S1: subtask \"T2-S1\" does not belong to task \"T1\" (expected T1-S<n>)",
            "16:9: tasks.T1.subtasks.T2-S1: subtask \"T2-S1\" is missing from tasks.T1.subtask_order",
        ],
    },
    Mutation {
        file: "S/state.json",
        find: "\"current_task\": \"T1\",\n    \"global_phase\"",
        replace: "\"current_task\": \"T2\",\n    \"global_phase\"",
        expect: &["7:21: request.current_task: \"T2\" is not in tasks"],
    },
    Mutation {
        file: "S/state.json",
        find: "\"version\": 2",
        replace: "\"version\": 1",
        expect: &["2:14: version: expected 2, got an integer (1)"],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "created_by: code-explore\n",
        replace: "created_by: code-explore\nowner: me\n",
        expect: &[
            "5:1: owner: unknown field (the schema allows only version, request_id, created_at, created_by, project_manifest, explored_files, directory_structure)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "created_by: code-explore\n",
        replace: "",
        expect: &["1:1: missing required field \"created_by\""],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "request_id: R1",
        replace: "request_id: REQ-1",
        expect: &[
            "2:13: request_id: \"REQ-1\" is not a request id (R1, R2, ...)",
            "2:13: request_id: \"REQ-1\" does not match the request directory \"R1\" in the file's path",
        ],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "  - path: \"src/main/java/com/example/user/User.java\"",
        replace: "  - path: 42",
        expect: &["13:11: explored_files[1].path: expected a string, got an integer (42)"],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "request_id: R1",
        replace: "request_id: R2",
        expect: &[
            "2:13: request_id: \"R2\" does not match the request directory \"R1\" in the file's path",
        ],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "    objective: \"a 기능 API 엔드포인트 구현\"\n",
        replace: "    objective: \"a 기능 API 엔드포인트 구현\"\n    owner: me\n",
        expect: &[
            "13:5: tasks[0].owner: unknown field (the schema allows only id, name, objective, subtasks)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "    objective: \"b 기능 API 엔드포인트 구현\"\n",
        replace: "",
        expect: &["24:5: tasks[1]: missing required field \"objective\""],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "  - id: T2\n",
        replace: "  - id: Task2\n",
        expect: &[
            "24:9: tasks[1].id: \"Task2\" is not a task id (T1, T2, ...)",
            "24:9: tasks[1].id: task \"Task2\" is missing from task_order",
            "39:20: task_order[1]: \"T2\" is not one of the tasks",
        ],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "assumptions:\n  - \"인증 관련 코드는 auth/ 디렉토리에 있을 것\"\n  - \"Spring Security를 사용 중일 것\"\n",
        replace: "assumptions: \"none\"\n",
        expect: &["35:14: assumptions: expected a list, got a string (\"none\")"],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "      - id: T1-S3",
        replace: "      - id: T2-S3",
        expect: &[
            "20:13: tasks[0].subtasks[2].id: \"T2-S3\" does not belong to task \"T1\" (expected T1-S<n>)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/task-breakdown.yaml",
        find: "task_order: [\"T1\", \"T2\"]",
        replace: "task_order: [\"T1\", \"T3\"]",
        expect: &[
            "24:9: tasks[1].id: task \"T2\" is missing from task_order",
            "39:20: task_order[1]: \"T3\" is not one of the tasks",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "scope_out:\n",
        replace: "owner: me\nscope_out:\n",
        expect: &[
            "26:1: owner: unknown field (the schema allows only version, request_id, task_id, created_at, created_by, task_name, objective, subtasks, completion_criteria, scope_in, scope_out, file_refs)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "completion_criteria:\n  - \"API 엔드포인트 동작\"\n  - \"테스트 통과\"\n",
        replace: "",
        expect: &["1:1: missing required field \"completion_criteria\""],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "status: \"to_create\"",
        replace: "status: \"planned\"",
        expect: &[
            "32:13: file_refs[0].status: \"planned\" is not one of: exists, to_create, to_modify",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "  - id: T1-S1\n    name: \"API 스펙 확인\"",
        replace: "  - \"T1-S1\"",
        expect: &["11:5: subtasks[0]: expected a mapping, got a string (\"T1-S1\")"],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "  - id: T1-S3",
        replace: "  - id: T2-S3",
        expect: &[
            "15:9: subtasks[2].id: \"T2-S3\" does not belong to task \"T1\" (expected T1-S<n>)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-brief.yaml",
        find: "task_id: T1",
        replace: "task_id: T2",
        expect: &[
            "3:10: task_id: \"T2\" does not match the task directory \"T1\" in the file's path",
            "11:9: subtasks[0].id: \"T1-S1\" does not belong to task \"T2\" (expected T2-S<n>)",
            "13:9: subtasks[1].id: \"T1-S2\" does not belong to task \"T2\" (expected T2-S<n>)",
            "15:9: subtasks[2].id: \"T1-S3\" does not belong to task \"T2\" (expected T2-S<n>)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-contract.yaml",
        find: "    note: \"인터페이스만 의존\"",
        replace: "    note: \"인터페이스만 의존\"\n    reason: \"x\"",
        expect: &[
            "34:5: boundaries[1].reason: unknown field (the schema allows only from, to, allowed, note)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-contract.yaml",
        find: "    contract: \"유효한 ID로 데이터 조회\"\n",
        replace: "",
        expect: &["16:5: interfaces[0]: missing required field \"contract\""],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-contract.yaml",
        find: "status: \"to_create\"",
        replace: "status: \"done\"",
        expect: &[
            "44:13: file_refs[0].status: \"done\" is not one of: exists, to_create, to_modify",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-contract.yaml",
        find: "    allowed: true\n    note",
        replace: "    allowed: \"yes\"\n    note",
        expect: &["32:14: boundaries[1].allowed: expected true or false, got a string (\"yes\")"],
    },
    Mutation {
        file: "S/contracts/R1/T1/design-contract.yaml",
        find: "id: \"INV-2\"",
        replace: "id: \"INV-1\"",
        expect: &["12:9: invariants[1].id: duplicate id \"INV-1\" (first at line 10)"],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-contract.yaml",
        find: "    category: \"happy_path\"\n",
        replace: "    category: \"happy_path\"\n    priority: high\n",
        expect: &[
            "18:5: test_cases[0].priority: unknown field (the schema allows only id, name, target, given, when, then, category)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-contract.yaml",
        find: "subtask_name: \"테스트 작성\"\n",
        replace: "",
        expect: &["1:1: missing required field \"subtask_name\""],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-contract.yaml",
        find: "category: \"error_case\"",
        replace: "category: \"sad_path\"",
        expect: &[
            "25:15: test_cases[1].category: \"sad_path\" is not one of: happy_path, error_case, edge_case",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-contract.yaml",
        find: "test_file_path: \"src/test/java/com/example/service/AServiceTest.java\"",
        replace: "test_file_path: [\"a\", \"b\"]",
        expect: &["31:17: test_file_path: expected a string, got a list"],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-contract.yaml",
        find: "subtask_id: T1-S2",
        replace: "subtask_id: T2-S2",
        expect: &[
            "4:13: subtask_id: \"T2-S2\" does not belong to task \"T1\" (expected T1-S<n>)",
            "4:13: subtask_id: \"T2-S2\" does not match the subtask directory \"T1-S2\" in the file's path",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "  result: \"pass\"\n",
        replace: "  result: \"pass\"\n  duration: 3\n",
        expect: &[
            "12:3: execution.duration: unknown field (the schema allows only command, timestamp, result)",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "recommendation:\n  action: \"complete\"\n  reason: \"모든 테스트 통과\"\n",
        replace: "",
        expect: &["1:1: missing required field \"recommendation\""],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "result: \"pass\"",
        replace: "result: \"passed\"",
        expect: &["11:11: execution.result: \"passed\" is not one of: pass, fail"],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "total: 2",
        replace: "total: \"two\"",
        expect: &["14:10: summary.total: expected a non-negative integer, got a string (\"two\")"],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "total: 2",
        replace: "total: 3",
        expect: &["14:10: summary.total: 3 is not passed + failed + skipped (2 + 0 + 0 = 2)"],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "  failed: 0\n",
        replace: "  failed: 1\n",
        expect: &[
            "11:11: execution.result: \"pass\" but summary.failed is 1",
            "14:10: summary.total: 2 is not passed + failed + skipped (2 + 1 + 0 = 3)",
            "16:11: summary.failed: 1 does not match the 0 entries of failed_tests",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "result: \"pass\"",
        replace: "result: \"fail\"",
        expect: &[
            "11:11: execution.result: \"fail\" but summary.failed is 0",
            "22:11: recommendation.action: \"complete\" contradicts execution.result \"fail\"",
        ],
    },
    Mutation {
        file: "S/contracts/R1/T1/T1-S2/test-result.yaml",
        find: "subtask_id: T1-S2",
        replace: "subtask_id: T1-S3",
        expect: &[
            "4:13: subtask_id: \"T1-S3\" does not match the subtask directory \"T1-S2\" in the file's path",
        ],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "  testing: \"JUnit 5 + Mockito\"\n",
        replace: "  testing: \"JUnit 5 + Mockito\"\n  testing_extra:\n    - a\n",
        expect: &[
            "14:5: patterns.testing_extra: expected a string or a mapping of names to strings, got a list",
        ],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "updated_at: \"2024-01-15T12:00:00Z\"\n",
        replace: "",
        expect: &["1:1: missing required field \"updated_at\""],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "    learned_from: \"T3\"\n",
        replace: "    learned_from: \"T3\"\n    severity: high\n",
        expect: &[
            "29:5: pitfalls[0].severity: unknown field (the schema allows only id, description, reason, learned_from)",
        ],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "hash: \"a1b2c3d4\"",
        replace: "hash: \"A1B2\"",
        expect: &[
            "5:9: project.hash: \"A1B2\" is not a project hash (8 lowercase hex digits of md5(project_root))",
            "5:9: project.hash: \"A1B2\" does not match the knowledge directory \"a1b2c3d4\" in the file's path",
        ],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "id: \"P2\"",
        replace: "id: \"P1\"",
        expect: &["29:9: pitfalls[1].id: duplicate id \"P1\" (first at line 25)"],
    },
    Mutation {
        file: "K/knowledge.yaml",
        find: "hash: \"a1b2c3d4\"",
        replace: "hash: \"00000000\"",
        expect: &[
            "5:9: project.hash: \"00000000\" does not match the knowledge directory \"a1b2c3d4\" in the file's path",
        ],
    },
    Mutation {
        file: "F/T1.preliminary-design-brief.yaml",
        find: "dependencies:",
        replace: "owner: me\ndependencies:",
        expect: &[
            "29:1: owner: unknown field (the schema allows only version, task_id, created_at, created_by, task_name, objective, assumptions, completion_criteria, scope_in, scope_out, dependencies)",
        ],
    },
    Mutation {
        file: "F/T1.preliminary-design-brief.yaml",
        find: "assumptions:\n  - \"인증 관련 코드는 auth/ 또는 security/ 디렉토리에 있을 것\"\n  - \"Spring Security를 사용 중일 것\"\n  - \"User 엔티티가 이미 존재할 것\"\n",
        replace: "",
        expect: &["1:1: missing required field \"assumptions\""],
    },
    Mutation {
        file: "F/T1.preliminary-design-brief.yaml",
        find: "assumptions:\n  - \"인증 관련 코드는 auth/ 또는 security/ 디렉토리에 있을 것\"\n  - \"Spring Security를 사용 중일 것\"\n  - \"User 엔티티가 이미 존재할 것\"\n",
        replace: "assumptions: []\n",
        expect: &["10:14: assumptions: must list at least one item"],
    },
    Mutation {
        file: "F/T1.preliminary-design-brief.yaml",
        find: "created_at: 2024-01-15T10:00:00",
        replace: "created_at: yesterday",
        expect: &[
            "3:13: created_at: \"yesterday\" is not an ISO 8601 date-time (like 2024-01-15T10:00:00Z)",
        ],
    },
    Mutation {
        file: "F/T1.preliminary-design-brief.yaml",
        find: "task_id: T1",
        replace: "task_id: T2",
        expect: &["2:10: task_id: \"T2\" does not match \"T1\" in the file name"],
    },
    Mutation {
        file: "F/T1.design-brief.yaml",
        find: "status: exists",
        replace: "status: present",
        expect: &[
            "29:13: file_refs[0].status: \"present\" is not one of: exists, to_create, to_modify",
        ],
    },
    Mutation {
        file: "F/T1.design-contract.yaml",
        find: "version: 1\n",
        replace: "version: 1\nrequest_id: R1\n",
        expect: &[
            "2:1: request_id: unknown field (the schema allows only version, task_id, created_at, created_by, task_name, invariants, interfaces, boundaries, layer_assignments, file_refs)",
        ],
    },
    Mutation {
        file: "F/T1.design-contract.yaml",
        find: "  - from: AuthService\n    to: JwtTokenProvider\n    allowed: true\n",
        replace: "  - from: AuthService\n    to: JwtTokenProvider\n",
        expect: &["44:5: boundaries[2]: missing required field \"allowed\""],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "category: edge_case",
        replace: "category: boundary",
        expect: &[
            "39:15: test_cases[3].category: \"boundary\" is not one of: happy_path, error_case, edge_case",
        ],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "id: TC-3",
        replace: "id: TC-2",
        expect: &["25:9: test_cases[2].id: duplicate id \"TC-2\" (first at line 17)"],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "action: complete",
        replace: "action: done",
        expect: &[
            "25:11: recommendation.action: \"done\" is not one of: complete, retry_implementation, retry_design",
        ],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "failed_tests: []",
        replace: "failed_tests: {}",
        expect: &["17:15: failed_tests: expected a list, got a mapping"],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "  skipped: 0\n",
        replace: "  skipped: 0\n  flaky: 0\n",
        expect: &[
            "16:3: summary.flaky: unknown field (the schema allows only total, passed, failed, skipped)",
        ],
    },
    Mutation {
        file: "F/T1.design-brief.yaml",
        find: "scope_out:",
        replace: "owner: me\nscope_out:",
        expect: &[
            "20:1: owner: unknown field (the schema allows only version, task_id, created_at, created_by, task_name, objective, completion_criteria, scope_in, scope_out, file_refs)",
        ],
    },
    Mutation {
        file: "F/T1.design-brief.yaml",
        find: "objective: JWT 기반 로그인/로그아웃 구현\n",
        replace: "",
        expect: &["1:1: missing required field \"objective\""],
    },
    Mutation {
        file: "F/T1.design-brief.yaml",
        find: "task_name: 사용자 인증 기능",
        replace: "task_name: [사용자, 인증]",
        expect: &["6:12: task_name: expected a string, got a list"],
    },
    Mutation {
        file: "F/T1.design-brief.yaml",
        find: "task_id: T1",
        replace: "task_id: T9",
        expect: &["2:10: task_id: \"T9\" does not match \"T1\" in the file name"],
    },
    Mutation {
        file: "F/T1.design-contract.yaml",
        find: "status: to_create",
        replace: "status: new",
        expect: &[
            "60:13: file_refs[0].status: \"new\" is not one of: exists, to_create, to_modify",
        ],
    },
    Mutation {
        file: "F/T1.design-contract.yaml",
        find: "invariants:\n",
        replace: "invariants: {}\nx_invariants:\n",
        expect: &[
            "8:13: invariants: expected a list, got a mapping",
            "9:1: x_invariants: unknown field (the schema allows only version, task_id, created_at, created_by, task_name, invariants, interfaces, boundaries, layer_assignments, file_refs)",
        ],
    },
    Mutation {
        file: "F/T1.design-contract.yaml",
        find: "id: INV-3",
        replace: "id: INV-1",
        expect: &["13:9: invariants[2].id: duplicate id \"INV-1\" (first at line 9)"],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "    category: happy_path\n",
        replace: "    category: happy_path\n    tags: [fast]\n",
        expect: &[
            "16:5: test_cases[0].tags: unknown field (the schema allows only id, name, target, given, when, then, category)",
        ],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "coverage_targets:\n  - AuthService.login\n  - AuthService.logout\n  - JwtTokenProvider.createToken\n  - JwtTokenProvider.validateToken\n",
        replace: "",
        expect: &["1:1: missing required field \"coverage_targets\""],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "version: 1",
        replace: "version: one",
        expect: &["1:10: version: expected 1, got a string (\"one\")"],
    },
    Mutation {
        file: "F/T1.test-contract.yaml",
        find: "task_id: T1",
        replace: "task_id: T01x",
        expect: &[
            "2:10: task_id: \"T01x\" is not a task id (T1, T2, ...)",
            "2:10: task_id: \"T01x\" does not match \"T1\" in the file name",
        ],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "execution:\n  command: ./gradlew test\n  timestamp: 2024-01-15T11:00:00\n  result: pass  # pass | fail\n",
        replace: "",
        expect: &["1:1: missing required field \"execution\""],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "  passed: 4\n",
        replace: "  passed: 3\n",
        expect: &["12:10: summary.total: 4 is not passed + failed + skipped (3 + 0 + 0 = 3)"],
    },
    Mutation {
        file: "F/T1.test-result.yaml",
        find: "summary:\n  total: 4",
        replace: "summary:\n  total: 4\n total2: 4",
        expect: &["13:2: not valid YAML: while parsing a block mapping, did not find expected key"],
    },
    Mutation {
        file: "S/state.json",
        find: "\"task_order\": [\"T1\", \"T2\"]\n",
        replace: "\"task_order\": [\"T1\", \"T2\"],\n",
        expect: &["43:1: not valid JSON: expected a string key"],
    },
    Mutation {
        file: "S/contracts/R1/explored.yaml",
        find: "explored_files:\n",
        replace: "explored_files:\n  - path: \"a\"\n    summary: \"b\"\n  bad: [\n",
        expect: &[
            "13:3: not valid YAML: while parsing a block collection, did not find expected '-' indicator",
        ],
    },
];
