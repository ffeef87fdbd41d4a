//! The source tree's layering (issue 9): each part of `src/` may use only
//! the parts below it, so the architecture `ls src/` shows is the one the
//! code has. A new part or a new dependency between parts is a change to
//! the table here, made on purpose.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The front ends (`events`, `cli`) may use every part but each other
/// (and only the CLI reaches `monitor` and `exporter`).
const BELOW_FRONT_ENDS: &[&str] = &[
    "harness",
    "receipts",
    "telemetry",
    "guards",
    "intel",
    "diagnostics",
    "daemon",
    "engine",
    "astgrep",
    "orchestrator",
    "tasks",
    "ralph",
    "lsp",
    "hook",
    "state",
    "util",
];

/// What the CLI may use: everything below the front ends, the monitor and
/// the OpenTelemetry exporter.
const BELOW_FRONT_ENDS_AND_MONITOR: &[&str] = &[
    "harness",
    "monitor",
    "exporter",
    "receipts",
    "telemetry",
    "guards",
    "intel",
    "diagnostics",
    "daemon",
    "engine",
    "astgrep",
    "orchestrator",
    "tasks",
    "ralph",
    "lsp",
    "hook",
    "state",
    "util",
];

/// Each part and the parts it may use. Lowest layer first.
const ALLOWED: &[(&str, &[&str])] = &[
    ("util", &[]),
    ("state", &["util"]),
    ("hook", &["state", "util"]),
    // The other agent harnesses' dialects, in front of the handlers.
    ("harness", &["hook", "util"]),
    ("lsp", &["hook", "state", "util"]),
    ("astgrep", &["hook", "state", "util"]),
    ("ralph", &["hook", "state", "util"]),
    ("tasks", &["hook", "state", "util"]),
    ("orchestrator", &["hook", "state", "util"]),
    // The project engine: server choice, batches, reports, loop checks.
    (
        "engine",
        &["astgrep", "lsp", "ralph", "hook", "state", "util"],
    ),
    // The daemon runs the engine's checks with its warm servers.
    ("daemon", &["engine", "lsp", "hook", "state", "util"]),
    (
        "diagnostics",
        &[
            "daemon", "engine", "astgrep", "lsp", "ralph", "hook", "state", "util",
        ],
    ),
    (
        "intel",
        &[
            "diagnostics",
            "daemon",
            "engine",
            "astgrep",
            "lsp",
            "hook",
            "state",
            "util",
        ],
    ),
    (
        "guards",
        &["tasks", "ralph", "orchestrator", "hook", "state", "util"],
    ),
    // The dashboard server: only the CLI reaches it (issue 14). Its write
    // API applies the guard's policy for the agent's CLI (issue 31).
    (
        "monitor",
        &["guards", "tasks", "ralph", "hook", "state", "util"],
    ),
    // Telemetry's light side: the switch, starting and stopping the
    // exporter, status lines. The hooks reach it.
    ("telemetry", &["daemon", "ralph", "hook", "state", "util"]),
    // The OpenTelemetry exporter (tokio, tonic, the OTel crates): only the
    // CLI reaches it, so no hook binary links any of it.
    ("exporter", &["telemetry", "hook", "state", "util"]),
    // Completion receipts: the statement, the work's git tree, signing,
    // `verify` (the diagnostics re-run is the CLI's, handed in).
    ("receipts", &["lsp", "ralph", "hook", "state", "util"]),
    ("events", BELOW_FRONT_ENDS),
    ("cli", BELOW_FRONT_ENDS_AND_MONITOR),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The part a file belongs to: `src/ralph.rs` and `src/ralph/x.rs` are both `ralph`.
fn part_of(src: &Path, file: &Path) -> String {
    let first = file.strip_prefix(src).unwrap().components().next().unwrap();
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The parts a file's code (not its comments) names through `crate::`.
fn parts_used(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                used.insert(name);
            }
        }
    }
    used
}

#[test]
fn no_part_uses_a_part_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let known: BTreeSet<&str> = ALLOWED.iter().map(|(part, _)| *part).collect();
    let mut violations = Vec::new();
    for file in &files {
        if file.ends_with("lib.rs") {
            continue;
        }
        let part = part_of(&src, file);
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| *name == part) else {
            violations.push(format!(
                "{}: part {part:?} is not in tests/layers.rs",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for used in parts_used(&text) {
            if used == part {
                continue;
            }
            if !known.contains(used.as_str()) {
                violations.push(format!(
                    "{}: uses crate::{used}, which is no part",
                    file.display()
                ));
            } else if !allowed.contains(&used.as_str()) {
                violations.push(format!(
                    "{}: {part} uses {used}, which is not below it",
                    file.display()
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_part_is_a_folder_with_its_module_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (part, _) in ALLOWED {
        assert!(
            src.join(format!("{part}.rs")).is_file(),
            "src/{part}.rs is missing"
        );
    }
    let loose: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "lib.rs")
        .filter(|name| {
            !ALLOWED
                .iter()
                .any(|(part, _)| format!("{part}.rs") == *name)
        })
        .collect();
    assert!(
        loose.is_empty(),
        "loose modules in src/ outside the parts: {loose:?}"
    );
}

/// The files a file's code names: `super::x` (a sibling `x.rs`) and
/// `crate::part::x` (`src/part/x.rs`), grouped imports included.
fn files_used(src: &Path, file: &Path, text: &str) -> BTreeSet<PathBuf> {
    let folder = file.parent().unwrap().to_path_buf();
    let mut used = BTreeSet::new();
    let mut add = |dir: &Path, name: &str| {
        let candidate = dir.join(format!("{name}.rs"));
        if candidate.is_file() && candidate != file {
            used.insert(candidate);
        }
    };
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (prefix, is_super) in [("super::", true), ("crate::", false)] {
            let mut rest = code;
            while let Some(at) = rest.find(prefix) {
                rest = &rest[at + prefix.len()..];
                let ident = |text: &str| -> String {
                    text.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()
                };
                let (dir, after) = if is_super {
                    (folder.clone(), rest)
                } else {
                    let part = ident(rest);
                    let after = rest[part.len()..].strip_prefix("::").unwrap_or("");
                    (src.join(&part), after)
                };
                if let Some(group) = after.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    for item in group.split(',') {
                        add(&dir, &ident(item.trim()));
                    }
                } else {
                    add(&dir, &ident(after));
                }
            }
        }
    }
    used
}

#[test]
fn no_two_files_use_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let uses: Vec<(PathBuf, BTreeSet<PathBuf>)> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            (file.clone(), files_used(&src, file, &text))
        })
        .collect();
    let mut pairs = Vec::new();
    for (file, used) in &uses {
        for other in used {
            let back = uses
                .iter()
                .find(|(candidate, _)| candidate == other)
                .is_some_and(|(_, theirs)| theirs.contains(file));
            if back && file < other {
                pairs.push(format!(
                    "{} <-> {}",
                    file.strip_prefix(&src).unwrap().display(),
                    other.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(
        pairs.is_empty(),
        "files that use each other (one of them should own what both need):\n{}",
        pairs.join("\n")
    );
}

/// The deprecated YAML crate and the unsafe C port under it (RUSTSEC-2024-0449)
/// stay out of the build: YAML is read with serde-saphyr, as ast-grep does.
/// CI's advisory check (`.ci/advisories.sh`) covers the rest of the tree.
#[test]
fn the_lock_file_has_no_unmaintained_yaml_crate() {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    for name in ["serde_yaml", "unsafe-libyaml"] {
        assert!(
            !lock.contains(&format!("name = \"{name}\"")),
            "{name} is back in Cargo.lock"
        );
    }
}
