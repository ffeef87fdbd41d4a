//! Schemas of the orchestrator's files and the check
//! that every violation is reported with its line and column.
//!
//! - [`recognize`] tells from a path alone (no IO, no parsing) whether a file
//!   is one of ours and which schema applies: the storage layout under
//!   `.claude/orchestrator/` (or the state root), or the contracts' flat
//!   `contracts/<taskId>.<kind>.yaml`. Both layouts are valid where they stand.
//! - [`validate`] parses the text into a positioned tree ([`tree`]), checks
//!   it against the kind's fields ([`kinds`], written in the [`rules`]
//!   language) and then across fields and against the path.
//! - [`hook`] is the same check inside the PreToolUse and PostToolUse hooks.

pub mod hook;
pub mod kinds;
pub mod md5;
pub mod rules;
pub mod tree;

use std::path::{Component, Path, PathBuf};

pub use md5::project_hash;
pub use rules::Violation;
use tree::{Pos, Value};

/// Which file: one per file name the seeds define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Session,
    State,
    Knowledge,
    Explored,
    TaskBreakdown,
    PreliminaryDesignBrief,
    DesignBrief,
    DesignContract,
    TestContract,
    TestResult,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Session,
        Kind::State,
        Kind::Knowledge,
        Kind::Explored,
        Kind::TaskBreakdown,
        Kind::PreliminaryDesignBrief,
        Kind::DesignBrief,
        Kind::DesignContract,
        Kind::TestContract,
        Kind::TestResult,
    ];

    /// The name without extension, as seed 003's flat names use it.
    pub fn stem(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::State => "state",
            Kind::Knowledge => "knowledge",
            Kind::Explored => "explored",
            Kind::TaskBreakdown => "task-breakdown",
            Kind::PreliminaryDesignBrief => "preliminary-design-brief",
            Kind::DesignBrief => "design-brief",
            Kind::DesignContract => "design-contract",
            Kind::TestContract => "test-contract",
            Kind::TestResult => "test-result",
        }
    }

    pub fn is_json(self) -> bool {
        matches!(self, Kind::Session | Kind::State)
    }

    pub fn file_name(self) -> String {
        format!(
            "{}.{}",
            self.stem(),
            if self.is_json() { "json" } else { "yaml" }
        )
    }

    fn from_file_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.file_name() == name)
    }

    /// The kinds seed 003 stores flat as `<taskId>.<kind>.yaml`.
    fn from_flat_stem(stem: &str) -> Option<Kind> {
        [
            Kind::PreliminaryDesignBrief,
            Kind::DesignBrief,
            Kind::DesignContract,
            Kind::TestContract,
            Kind::TestResult,
        ]
        .into_iter()
        .find(|kind| kind.stem() == stem)
    }

    /// Where seed 001 stores it, relative to the orchestrator root.
    pub fn storage_place(self) -> String {
        let dir = match self {
            Kind::Session | Kind::State => "sessions/<projectHash>",
            Kind::Knowledge => "knowledge/<projectHash>",
            Kind::Explored | Kind::TaskBreakdown => "sessions/<projectHash>/contracts/<requestId>",
            Kind::PreliminaryDesignBrief | Kind::DesignBrief | Kind::DesignContract => {
                "sessions/<projectHash>/contracts/<requestId>/<taskId>"
            }
            Kind::TestContract | Kind::TestResult => {
                "sessions/<projectHash>/contracts/<requestId>/<taskId>/<subtaskId>"
            }
        };
        format!("{dir}/{}", self.file_name())
    }

    /// How many directories below `contracts/` a seed 001 contract sits.
    fn contract_depth(self) -> Option<usize> {
        match self {
            Kind::Explored | Kind::TaskBreakdown => Some(1),
            Kind::DesignBrief | Kind::DesignContract => Some(2),
            Kind::TestContract | Kind::TestResult => Some(3),
            _ => None,
        }
    }
}

/// Which seed's format a file follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Seed 001: `.claude/orchestrator/sessions/<projectHash>/…`, with request ids.
    Storage,
    /// Seed 003: `contracts/<taskId>.<kind>.yaml`, without request ids.
    Flat,
}

/// Ids a file's path carries, which the ids inside must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathIds {
    pub hash: Option<String>,
    pub request: Option<String>,
    pub task: Option<String>,
    pub subtask: Option<String>,
}

/// What a path is: the kind, the layout, and the ids its place implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub kind: Kind,
    pub layout: Layout,
    pub ids: PathIds,
    /// Set when a seed 001 file sits in the wrong place under the root.
    pub misplaced: Option<String>,
}

impl Role {
    /// "seed 001 test-result.yaml", for messages.
    pub fn title(&self) -> String {
        match self.layout {
            Layout::Storage => format!("seed 001 {}", self.kind.file_name()),
            Layout::Flat => format!("seed 003 <taskId>.{}.yaml", self.kind.stem()),
        }
    }

    /// Where the schema is defined, for "regenerate the file following …".
    pub fn schema_source(&self) -> String {
        match self.layout {
            Layout::Storage => format!(
                "seed 001 (orchestrator file storage), {} at {}",
                self.kind.file_name(),
                self.kind.storage_place()
            ),
            Layout::Flat => format!(
                "seed 003 (contract formats), contracts/<taskId>.{}.yaml",
                self.kind.stem()
            ),
        }
    }

    pub fn outline(&self) -> String {
        let outline = kinds::fields(self.kind, self.layout)
            .map(rules::outline)
            .unwrap_or_default();
        if self.kind.is_json() {
            format!("# shown in YAML notation; the file itself is JSON\n{outline}")
        } else {
            outline
        }
    }
}

/// Recognises an orchestrator file by its name and place, from the path
/// alone: no IO. `None` means "not ours"; hooks then leave the call alone.
pub fn recognize(path: &Path, state_root: &Path) -> Option<Role> {
    let file_name = path.file_name()?.to_str()?;
    if !(file_name.ends_with(".yaml") || file_name.ends_with(".json")) {
        return None;
    }
    if let Some(role) = recognize_flat(path, file_name) {
        return Some(role);
    }
    let kind = Kind::from_file_name(file_name)?;
    let relative = orchestrator_relative(path, state_root)?;
    let parts: Vec<&str> = relative.iter().map(String::as_str).collect();
    let ids_of = |hash: &str| PathIds {
        hash: Some(hash.to_string()),
        ..PathIds::default()
    };
    let placed = |ids: PathIds| Role {
        kind,
        layout: Layout::Storage,
        ids,
        misplaced: None,
    };
    match (kind, parts.as_slice()) {
        (Kind::Session | Kind::State, ["sessions", hash, _]) => Some(placed(ids_of(hash))),
        (Kind::Knowledge, ["knowledge", hash, _]) => Some(placed(ids_of(hash))),
        (_, ["sessions", _, "contracts", rest @ ..])
            if kind.contract_depth() == Some(rest.len().saturating_sub(1)) =>
        {
            let ids = PathIds {
                hash: None,
                request: rest
                    .first()
                    .filter(|_| rest.len() > 1)
                    .map(|s| s.to_string()),
                task: rest
                    .get(1)
                    .filter(|_| rest.len() > 2)
                    .map(|s| s.to_string()),
                subtask: rest
                    .get(2)
                    .filter(|_| rest.len() > 3)
                    .map(|s| s.to_string()),
            };
            Some(placed(ids))
        }
        // A seed 001 file in the wrong place of the sessions or knowledge
        // tree: still validated, and the place reported.
        (_, [top, ..])
            if (*top == "sessions" || *top == "knowledge")
                && kind != Kind::PreliminaryDesignBrief =>
        {
            Some(Role {
                kind,
                layout: Layout::Storage,
                ids: PathIds::default(),
                misplaced: Some(format!(
                    "{} belongs at {} (seed 001), not at {}",
                    kind.file_name(),
                    kind.storage_place(),
                    parts.join("/")
                )),
            })
        }
        _ => None,
    }
}

/// Seed 003's `contracts/<taskId>.<kind>.yaml`, in any `contracts` directory.
fn recognize_flat(path: &Path, file_name: &str) -> Option<Role> {
    let parent = path.parent()?.file_name()?;
    if parent != "contracts" {
        return None;
    }
    let (task, rest) = file_name.split_once('.')?;
    let kind = Kind::from_flat_stem(rest.strip_suffix(".yaml")?)?;
    Some(Role {
        kind,
        layout: Layout::Flat,
        ids: PathIds {
            task: Some(task.to_string()),
            ..PathIds::default()
        },
        misplaced: None,
    })
}

/// By name only, for `ralph-hooks validate` on a file outside any layout
/// (a fixture, a draft): `<kind>.yaml` takes seed 001's schema (seed 003's for
/// preliminary-design-brief, which only it defines), `<taskId>.<kind>.yaml`
/// seed 003's.
pub fn recognize_by_name(path: &Path) -> Option<Role> {
    let file_name = path.file_name()?.to_str()?;
    if let Some(kind) = Kind::from_file_name(file_name) {
        let layout = if kind == Kind::PreliminaryDesignBrief {
            Layout::Flat
        } else {
            Layout::Storage
        };
        return Some(Role {
            kind,
            layout,
            ids: PathIds::default(),
            misplaced: None,
        });
    }
    let (task, rest) = file_name.split_once('.')?;
    let kind = Kind::from_flat_stem(rest.strip_suffix(".yaml")?)?;
    Some(Role {
        kind,
        layout: Layout::Flat,
        ids: PathIds {
            task: Some(task.to_string()),
            ..PathIds::default()
        },
        misplaced: None,
    })
}

/// The path's components below the orchestrator root: the state root, or
/// else the last `.claude/orchestrator` in the path.
fn orchestrator_relative(path: &Path, state_root: &Path) -> Option<Vec<String>> {
    let path = normalize(path);
    let names = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    if let Ok(relative) = path.strip_prefix(normalize(state_root)) {
        return Some(names(relative));
    }
    let all = names(&path);
    let at = all
        .windows(2)
        .rposition(|pair| pair[0] == ".claude" && pair[1] == "orchestrator")?;
    Some(all[at + 2..].to_vec())
}

/// Resolves `.` and `..` without touching the disk (the file may not exist yet).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Reads `text` as the format of `kind` (JSON or YAML) into a positioned tree.
pub fn parse(kind: Kind, text: &str) -> Result<tree::Node, Violation> {
    let parsed = if kind.is_json() {
        tree::parse_json(text).map_err(|error| ("JSON", error))
    } else {
        tree::parse_yaml(text).map_err(|error| ("YAML", error))
    };
    parsed.map_err(|(format, error)| Violation {
        pos: error.pos,
        message: format!("not valid {format}: {}", error.message),
    })
}

/// Every violation of `text` as the file `role` describes, in file order.
pub fn validate(role: &Role, text: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    if let Some(misplaced) = &role.misplaced {
        out.push(Violation {
            pos: Pos::START,
            message: misplaced.clone(),
        });
    }
    let Some(fields) = kinds::fields(role.kind, role.layout) else {
        out.push(Violation {
            pos: Pos::START,
            message: format!("{} defines no {}", role.title(), role.kind.file_name()),
        });
        return out;
    };
    let root = match parse(role.kind, text) {
        Ok(root) => root,
        Err(violation) => {
            out.push(violation);
            return out;
        }
    };
    if matches!(root.value, Value::Null) {
        out.push(Violation {
            pos: root.pos,
            message: "the file is empty: expected a mapping at the top level".to_string(),
        });
        return out;
    }
    rules::check(&root, &rules::Ty::Object(fields), "", &mut out);
    kinds::cross_check(role.kind, role.layout, &root, &role.ids, &mut out);
    out.sort_by_key(|violation| violation.pos);
    out
}

/// `file:line:col: message`, the format editors and CI annotate from.
pub fn format_violation(file: &str, violation: &Violation) -> String {
    format!(
        "{file}:{}:{}: {}",
        violation.pos.line, violation.pos.col, violation.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/p/.claude/orchestrator";

    fn role_of(path: &str) -> Option<Role> {
        recognize(Path::new(path), Path::new(ROOT))
    }

    #[test]
    fn storage_layout_is_recognised_with_its_ids() {
        let role = role_of(
            "/p/.claude/orchestrator/sessions/a1b2c3d4/contracts/R1/T1/T1-S2/test-result.yaml",
        )
        .unwrap();
        assert_eq!(
            (role.kind, role.layout),
            (Kind::TestResult, Layout::Storage)
        );
        assert_eq!(role.ids.request.as_deref(), Some("R1"));
        assert_eq!(role.ids.task.as_deref(), Some("T1"));
        assert_eq!(role.ids.subtask.as_deref(), Some("T1-S2"));
        let role = role_of("/p/.claude/orchestrator/sessions/a1b2c3d4/state.json").unwrap();
        assert_eq!(
            (role.kind, role.ids.hash.as_deref()),
            (Kind::State, Some("a1b2c3d4"))
        );
        let role = role_of("/p/.claude/orchestrator/knowledge/a1b2c3d4/knowledge.yaml").unwrap();
        assert_eq!(role.kind, Kind::Knowledge);
        let role =
            role_of("/p/.claude/orchestrator/sessions/h/contracts/R1/explored.yaml").unwrap();
        assert_eq!(
            (role.kind, role.ids.request.as_deref()),
            (Kind::Explored, Some("R1"))
        );
        // Another project's orchestrator root is recognised by its name.
        let role = role_of("/q/.claude/orchestrator/sessions/h/contracts/R2/T3/design-brief.yaml")
            .unwrap();
        assert_eq!(
            (role.kind, role.ids.task.as_deref()),
            (Kind::DesignBrief, Some("T3"))
        );
    }

    #[test]
    fn misplaced_storage_files_are_flagged() {
        let role =
            role_of("/p/.claude/orchestrator/sessions/h/contracts/R1/test-result.yaml").unwrap();
        assert_eq!(
            role.misplaced.as_deref(),
            Some(
                "test-result.yaml belongs at sessions/<projectHash>/contracts/<requestId>/<taskId>/<subtaskId>/test-result.yaml (seed 001), not at sessions/h/contracts/R1/test-result.yaml"
            )
        );
    }

    #[test]
    fn flat_layout_is_recognised_anywhere() {
        let role = role_of("/home/u/.claude/claude-devkit/sessions/app-1234-20240115/contracts/T1.preliminary-design-brief.yaml").unwrap();
        assert_eq!(
            (role.kind, role.layout),
            (Kind::PreliminaryDesignBrief, Layout::Flat)
        );
        assert_eq!(role.ids.task.as_deref(), Some("T1"));
        assert_eq!(
            role_of("/x/contracts/T2.test-result.yaml").unwrap().kind,
            Kind::TestResult
        );
    }

    #[test]
    fn other_files_are_not_ours() {
        for path in [
            "/p/src/main.rs",
            "/p/state.json",
            "/p/app/sessions/abc/state.json",
            "/p/.claude/orchestrator/loop.json",
            "/p/.claude/orchestrator/state.json",
            "/p/.claude/orchestrator/command-state/session.json",
            "/p/contracts/T1.other.yaml",
            "/p/docs/test-result.yaml",
        ] {
            assert_eq!(role_of(path), None, "{path}");
        }
    }

    #[test]
    fn by_name_picks_the_seed_from_the_name() {
        let role = recognize_by_name(Path::new("fixtures/test-result.yaml")).unwrap();
        assert_eq!(
            (role.kind, role.layout),
            (Kind::TestResult, Layout::Storage)
        );
        let role = recognize_by_name(Path::new("T4.design-contract.yaml")).unwrap();
        assert_eq!(
            (role.kind, role.layout),
            (Kind::DesignContract, Layout::Flat)
        );
        assert_eq!(role.ids.task.as_deref(), Some("T4"));
        assert_eq!(recognize_by_name(Path::new("notes.yaml")), None);
    }

    #[test]
    fn parse_errors_and_empty_files_are_violations() {
        let role = recognize_by_name(Path::new("state.json")).unwrap();
        let violations = validate(&role, "{\"version\": 2,}");
        assert_eq!(
            violations,
            [Violation {
                pos: Pos { line: 1, col: 15 },
                message: "not valid JSON: expected a string key".into()
            }]
        );
        let role = recognize_by_name(Path::new("explored.yaml")).unwrap();
        assert_eq!(
            validate(&role, "\n")[0].message,
            "the file is empty: expected a mapping at the top level"
        );
    }
}
