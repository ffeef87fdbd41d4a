//! Edits land only on the text they were computed from (issue 30, item 2):
//! outside edits — lines inserted above and below uses, files created and
//! deleted — interleaved with `rename --apply`, through the scripted fake
//! server's `stale-rename` mode, which answers from what it read of the
//! files not given to it (as pyright does when warm) and changes the disk
//! between computing its answer and sending it. Every file afterwards is
//! either the correct rename of what it is now or untouched; a failed
//! command touched nothing. The real-pyright reproduction is in
//! `tests/intel.rs` (`rename_after_lines_inserted_by_the_shell_…`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::util::{self, TempDir};

const OLD: &str = "old_name";
const NEW: &str = "fresh_name";
/// The files an outside edit may touch; the first is the one renamed in.
const NAMES: &[&str] = &[
    "m.fk", "use0.fk", "use1.fk", "use2.fk", "new0.fk", "new1.fk",
];
/// Lines of the files at the start: uses, a longer name that contains the
/// old one, and lines without it.
const LINES: &[&str] = &[
    "old_name()",
    "x = old_name + 1",
    "# a comment line and a command",
    "old_name_2 = 3",
    "y = 2",
    "",
];
/// Lines an outside edit inserts: a comment, a new use, blank, other code.
const INSERTS: &[&str] = &[
    "# a comment line\n",
    "old_name()  # a new use\n",
    "\n",
    "z = old_name_2\n",
];

#[derive(Debug, Clone)]
enum Op {
    Insert {
        file: usize,
        line: usize,
        text: usize,
    },
    Create {
        file: usize,
        uses: usize,
    },
    Delete {
        file: usize,
    },
}

impl Op {
    fn to_json(&self) -> Value {
        match *self {
            Op::Insert { file, line, text } => {
                json!({"op": "insert", "file": NAMES[file], "line": line, "text": INSERTS[text]})
            }
            Op::Create { file, uses } => {
                json!({"op": "create", "file": NAMES[file], "text": created(uses)})
            }
            Op::Delete { file } => json!({"op": "delete", "file": NAMES[file]}),
        }
    }

    /// The same change on the model of the disk.
    fn apply(&self, files: &mut BTreeMap<String, String>) {
        match *self {
            Op::Insert { file, line, text } => {
                if let Some(old) = files.get(NAMES[file]) {
                    let mut lines: Vec<&str> = old.split_inclusive('\n').collect();
                    lines.insert(line.min(lines.len()), INSERTS[text]);
                    let new = lines.concat();
                    files.insert(NAMES[file].to_string(), new);
                }
            }
            Op::Create { file, uses } => {
                files.insert(NAMES[file].to_string(), created(uses));
            }
            Op::Delete { file } => {
                files.remove(NAMES[file]);
            }
        }
    }
}

fn created(uses: usize) -> String {
    format!("# made by a script\n{}", "old_name()\n".repeat(uses))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..NAMES.len(), 0..8usize, 0..INSERTS.len())
            .prop_map(|(file, line, text)| Op::Insert { file, line, text }),
        2 => (0..NAMES.len(), 0..3usize).prop_map(|(file, uses)| Op::Create { file, uses }),
        1 => (0..NAMES.len()).prop_map(|file| Op::Delete { file }),
    ]
}

/// The files at the start: the definition first in `m.fk`, then uses.
fn start_files() -> impl Strategy<Value = BTreeMap<String, String>> {
    let file = proptest::collection::vec(0..LINES.len(), 1..6);
    (proptest::collection::vec(file.clone(), 1..=3), file).prop_map(|(uses, tail)| {
        let body = |lines: &[usize]| -> String {
            lines.iter().map(|&i| format!("{}\n", LINES[i])).collect()
        };
        let mut files = BTreeMap::new();
        files.insert(
            "m.fk".to_string(),
            format!("def old_name():\n    return 1\n{}", body(&tail)),
        );
        for (index, lines) in uses.iter().enumerate() {
            files.insert(format!("use{index}.fk"), body(lines));
        }
        files
    })
}

/// Every whole-word `old_name` replaced: what a correct rename makes of it.
fn renamed(text: &str) -> String {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(OLD) {
        let start = at + found;
        let end = start + OLD.len();
        let whole = !text[..start].chars().next_back().is_some_and(is_ident)
            && !text[end..].chars().next().is_some_and(is_ident);
        out.push_str(&text[at..start]);
        out.push_str(if whole { NEW } else { OLD });
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

fn fk_files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "fk"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A project for the `stale-rename` fake with `files` and the outside
/// edits `script` (one list per rename request).
fn project(files: &BTreeMap<String, String>, script: &[Vec<Op>]) -> TempDir {
    project_with(files, script, &[])
}

fn project_with(files: &BTreeMap<String, String>, script: &[Vec<Op>], extra: &[&str]) -> TempDir {
    let dir = TempDir::new("edit-races");
    let root = dir.path();
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap();
    }
    let script: Vec<Vec<Value>> = script
        .iter()
        .map(|ops| ops.iter().map(Op::to_json).collect())
        .collect();
    std::fs::write(root.join("script.json"), Value::from(script).to_string()).unwrap();
    let mut args = vec![
        "--mode".to_string(),
        "stale-rename".into(),
        "--script".into(),
        root.join("script.json").display().to_string(),
        "--log-file".into(),
        root.join("rename.log").display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let server = json!({"fake": {
        "command": util::fake_lsp_server().display().to_string(),
        "args": args,
        "extensionToLanguage": {".fk": "fake"},
        "quietMs": 20,
    }});
    std::fs::write(root.join(".lsp.json"), server.to_string()).unwrap();
    dir
}

fn rename(project: &Path) -> Output {
    util::command("ralph-hooks", project)
        .arg("--project")
        .arg(project)
        .args(["rename", "m.fk", OLD, NEW, "--apply", "--timeout", "20"])
        .output()
        .unwrap()
}

/// The disk as the outside edits left it: the start, with the edits of
/// every rename request the fake answered.
fn outside(
    project: &Path,
    start: &BTreeMap<String, String>,
    script: &[Vec<Op>],
) -> BTreeMap<String, String> {
    let log = std::fs::read_to_string(project.join("rename.log")).unwrap_or_default();
    let mut files = start.clone();
    for line in log.lines() {
        let index: usize = line.trim_start_matches("applied ").parse().unwrap();
        for op in script.get(index).into_iter().flatten() {
            op.apply(&mut files);
        }
    }
    files
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn outside_edits_never_corrupt_a_rename(
        start in start_files(),
        script in proptest::collection::vec(proptest::collection::vec(op(), 0..3), 1..5),
    ) {
        let dir = project(&start, &script);
        let output = rename(dir.path());
        let said = format!(
            "stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let expected = outside(dir.path(), &start, &script);
        let actual = fk_files(dir.path());
        prop_assert_eq!(
            actual.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{}", said
        );
        for (name, now) in &actual {
            let before = &expected[name];
            prop_assert!(
                now == before || *now == renamed(before),
                "{} is neither untouched nor renamed:\n{:?}\nwas:\n{:?}\n{}", name, now, before, said
            );
            if output.status.code() != Some(0) {
                prop_assert_eq!(now, before, "a failed rename wrote {}; {}", name, said);
            }
        }
        if output.status.code() == Some(0) {
            prop_assert_eq!(&actual["m.fk"], &renamed(&expected["m.fk"]), "{}", said);
        }
    }
}

/// The shape of the bug report: a comment line inserted above a use while
/// the server computes; before, the new name went in at the old offsets.
#[test]
fn a_line_inserted_above_a_use_meanwhile_is_renamed_correctly() {
    let start = BTreeMap::from([
        (
            "m.fk".to_string(),
            "def old_name():\n    return 1\n".to_string(),
        ),
        (
            "use0.fk".to_string(),
            "from m import old_name\nold_name()\n".to_string(),
        ),
    ]);
    let script = vec![vec![Op::Insert {
        file: 1,
        line: 0,
        text: 0,
    }]];
    let dir = project(&start, &script);
    let output = rename(dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("use0.fk")).unwrap(),
        "# a comment line\nfrom m import fresh_name\nfresh_name()\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("m.fk")).unwrap(),
        "def fresh_name():\n    return 1\n"
    );
}

/// A file that changes at every request: refused after three attempts,
/// nothing written, the file named.
#[test]
fn a_file_that_keeps_changing_is_refused_and_nothing_is_written() {
    let start = BTreeMap::from([
        (
            "m.fk".to_string(),
            "def old_name():\n    return 1\n".to_string(),
        ),
        ("use0.fk".to_string(), "old_name()\n".to_string()),
    ]);
    let script = vec![
        vec![Op::Insert {
            file: 1,
            line: 0,
            text: 0
        }];
        12
    ];
    let dir = project(&start, &script);
    let output = rename(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "the files kept changing while the rename was computed (3 attempts); nothing written"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("use0.fk"), "{stderr}");
    let expected = outside(dir.path(), &start, &script);
    assert_eq!(fk_files(dir.path()), expected);
}

/// A server that answers from its old view even for the files it was sent:
/// sending the files cannot help, but its edits no longer fall on the old
/// name, so the rename is refused after three attempts and nothing is
/// written (before, the new name went in at the old offsets).
#[test]
fn positions_off_the_old_name_are_refused_even_from_a_server_out_of_step() {
    let start = BTreeMap::from([
        (
            "m.fk".to_string(),
            "def old_name():\n    return 1\n".to_string(),
        ),
        ("use0.fk".to_string(), "old_name()\n".to_string()),
    ]);
    let script = vec![vec![Op::Insert {
        file: 1,
        line: 0,
        text: 0,
    }]];
    let dir = project_with(&start, &script, &["--ignore-open"]);
    let output = rename(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is not the text fake computed the rename from: its edit at 1:1 does not fall on \"old_name\""),
        "{stderr}"
    );
    assert_eq!(fk_files(dir.path()), outside(dir.path(), &start, &script));
}

/// A file deleted while the server computed: the rename is computed again
/// and the file, which the server still names, is left out with a note.
#[test]
fn a_file_deleted_meanwhile_is_left_out_and_the_rest_renamed() {
    let start = BTreeMap::from([
        (
            "m.fk".to_string(),
            "def old_name():\n    return 1\n".to_string(),
        ),
        ("use0.fk".to_string(), "old_name()\n".to_string()),
        ("use1.fk".to_string(), "x = old_name\n".to_string()),
    ]);
    let script = vec![vec![], vec![Op::Delete { file: 2 }]];
    let dir = project(&start, &script);
    let output = rename(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("use1.fk changed since the rename was computed; computing it again"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fake answered with edits for use1.fk, which no longer exists; left out"),
        "{stderr}"
    );
    assert_eq!(
        fk_files(dir.path()),
        BTreeMap::from([
            (
                "m.fk".to_string(),
                "def fresh_name():\n    return 1\n".to_string()
            ),
            ("use0.fk".to_string(), "fresh_name()\n".to_string()),
        ])
    );
}
