//! The Python corpora the engine benches check: copies of the running
//! `python3`'s standard library at three sizes (small: nine packages, ~140
//! files; whole: every module but the tests and the GUI and 2to3 ones,
//! ~580; large: everything, tests included, ~2,000).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The standard library of the `python3` on PATH, or `BENCH_STDLIB` (a
/// Debian `python3` leaves the tests out, so its "large" is ~670 files;
/// CPython's own install keeps them: ~2,000).
pub fn stdlib() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BENCH_STDLIB") {
        return Some(PathBuf::from(path));
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import json, os; print(os.path.dirname(os.path.dirname(json.__file__)))",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    path.join("json/__init__.py").is_file().then_some(path)
}

const SMALL_PACKAGES: &[&str] = &[
    "email",
    "json",
    "http",
    "asyncio",
    "concurrent",
    "xml",
    "logging",
    "unittest",
    "importlib",
];
const WHOLE_LEFT_OUT: &[&str] = &[
    "site-packages",
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "tkinter",
    "turtledemo",
    "__pycache__",
];

/// Fills `root` with part of the standard library (`size`: small, whole or
/// large) and writes `config` (file name, text) beside it.
pub fn python_corpus(stdlib: &Path, size: &str, config: (&str, &str), root: &Path) {
    match size {
        "small" => {
            for package in SMALL_PACKAGES {
                copy_py(
                    &stdlib.join(package),
                    &root.join(package),
                    &["test", "tests"],
                );
            }
        }
        "whole" => copy_py(stdlib, root, WHOLE_LEFT_OUT),
        _ => copy_py(stdlib, root, &["site-packages", "__pycache__"]),
    }
    std::fs::write(root.join(config.0), config.1).unwrap();
}

/// Copies the `.py` files under `from`, leaving out folders named in
/// `left_out` (and `config-*`, the build's own).
pub fn copy_py(from: &Path, to: &Path, left_out: &[&str]) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    std::fs::create_dir_all(to).unwrap();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if path.is_dir() {
            if !left_out.iter().any(|l| *l == text) && !text.starts_with("config-") {
                copy_py(&path, &to.join(&name), left_out);
            }
        } else if text.ends_with(".py") {
            let _ = std::fs::copy(&path, to.join(&name));
        }
    }
}

/// Files with `extension` under `root`, outside `node_modules` and `.claude`.
pub fn count_files(root: &Path, extension: &str) -> usize {
    let mut n = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "node_modules" && entry.file_name() != ".claude" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == extension) {
                n += 1;
            }
        }
    }
    n
}
