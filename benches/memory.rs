//! The language servers' memory as the daemon keeps them (seed 004
//! AC-PERF-002: five servers at once within 500 MB), on small projects of
//! each language: Python (pyright, ty), TypeScript 5
//! (typescript-language-server) and 7 (`tsc --lsp`), C (clangd), Rust
//! (rust-analyzer) and Go (gopls).
//!
//! Each project is checked once (`ralph-hooks check`) through a fresh
//! daemon; once the servers have settled (the tree's memory stopped
//! changing: rust-analyzer's `cargo check` has ended), `daemon status`
//! gives every server's resident memory, its helpers included. Beside it,
//! the private part (anonymous pages): what the server costs the machine
//! beyond the shared libraries it maps from disk. Where we changed a
//! server's start options for memory, a second row runs it with its own
//! defaults (the options emptied in the project's `.lsp.json`), in the same
//! run. Then the five languages in one project, one server each, twice:
//! with ty and TypeScript 7, and with pyright and TypeScript 5.
//!
//! Run with `cargo bench --bench memory` (servers missing from PATH are
//! skipped and named). TypeScript 7 comes from the test cache
//! `.ci/install-servers.sh` fills (`~/.cache/ralph-hooks`, or
//! `RALPH_HOOKS_TEST_CACHE`); TypeScript 5 is the global one
//! typescript-language-server finds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

/// One row: language, server, the project's `.lsp.json` (to run the server
/// with its own defaults), and what writes the project (false: the server
/// is not installed).
type Case = (
    &'static str,
    &'static str,
    Option<Value>,
    Box<dyn Fn(&Path) -> bool>,
);

/// The seed's ceiling for five servers at once.
const SEED_LIMIT_MB: f64 = 500.0;

fn main() {
    println!(
        "ralph-hooks server memory (RSS through `daemon status`, helpers included; {} cores; load {})",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average()
    );
    println!();
    println!(
        "| language | server | options | RSS | private (anonymous) | processes | errors found |"
    );
    println!("|---|---|---|---:|---:|---:|---:|");
    let cache = test_cache();
    let ts7 = cache.join("typescript7/node_modules/typescript");
    let mut cases: Vec<Case> = vec![
        ("Python", "pyright", None, Box::new(python_pyright)),
        ("Python", "ty", None, Box::new(python_ty)),
        (
            "TypeScript 5",
            "typescript-language-server",
            None,
            Box::new(typescript5),
        ),
        (
            "TypeScript 5",
            "typescript-language-server",
            Some(json!({"typescript-language-server": {"initializationOptions": {}}})),
            Box::new(typescript5),
        ),
        ("TypeScript 7", "tsgo", None, {
            let ts7 = ts7.clone();
            Box::new(move |root: &Path| typescript7(root, &ts7))
        }),
        ("C", "clangd", None, Box::new(c_project)),
        ("Rust", "rust-analyzer", None, Box::new(rust_project)),
        (
            "Rust",
            "rust-analyzer",
            Some(json!({"rust-analyzer": {"initializationOptions": {}}})),
            Box::new(rust_project),
        ),
        ("Go", "gopls", None, Box::new(go_project)),
    ];
    let mut skipped = Vec::new();
    for (language, server, lsp_json, write) in cases.drain(..) {
        let root = temp_dir(&format!("{}-{}", server, lsp_json.is_some()));
        if !write(&root) {
            skipped.push(format!("{language} ({server}): not installed"));
            continue;
        }
        if let Some(lsp_json) = &lsp_json {
            std::fs::write(root.join(".lsp.json"), lsp_json.to_string()).unwrap();
        }
        let options = if lsp_json.is_some() {
            "the server's own defaults"
        } else {
            "ours"
        };
        match measure(&root) {
            Some(measured) => {
                for server_memory in &measured.servers {
                    println!(
                        "| {language} | {} | {options} | {} | {} | {} | {} |",
                        server_memory.name,
                        mb(server_memory.rss_kib),
                        mb(server_memory.private_kib),
                        server_memory.processes,
                        measured.errors
                    );
                }
                if measured.servers.is_empty() {
                    skipped.push(format!("{language} ({server}): no server ran"));
                }
            }
            None => skipped.push(format!("{language} ({server}): the daemon did not answer")),
        }
        let _ = std::fs::remove_dir_all(&root);
    }
    for line in &skipped {
        println!("(skipped: {line})");
    }

    println!();
    println!("Five languages in one project, one server each, at once:");
    println!();
    println!("| set | servers | their RSS | daemon | in all | private in all | within 500 MB |");
    println!("|---|---|---:|---:|---:|---:|---|");
    for (label, python, typescript) in [
        ("ty, TypeScript 7", "ty", "7"),
        ("pyright, TypeScript 5", "pyright", "5"),
    ] {
        let root = temp_dir(&format!("five-{python}-{typescript}"));
        let mut complete = match python {
            "ty" => python_ty(&root),
            _ => python_pyright(&root),
        };
        complete &= match typescript {
            "7" => typescript7(&root, &ts7),
            _ => typescript5(&root),
        };
        complete &= c_project(&root) & rust_project(&root) & go_project(&root);
        if !complete {
            println!("| {label} | (a server is missing: skipped) | | | | | |");
            continue;
        }
        if let Some(measured) = measure(&root) {
            let servers: u64 = measured.servers.iter().map(|s| s.rss_kib).sum();
            let private: u64 = measured.servers.iter().map(|s| s.private_kib).sum();
            let total = servers + measured.daemon_kib;
            let names: Vec<String> = measured
                .servers
                .iter()
                .map(|s| format!("{} {}", s.name, mb(s.rss_kib)))
                .collect();
            println!(
                "| {label} | {} | {} | {} | {} | {} | {} |",
                names.join(", "),
                mb(servers),
                mb(measured.daemon_kib),
                mb(total),
                mb(private + measured.daemon_private_kib),
                if total as f64 / 1024.0 <= SEED_LIMIT_MB {
                    "yes"
                } else {
                    "NO"
                }
            );
        }
        let _ = std::fs::remove_dir_all(&root);
    }
    println!();
    println!(
        "RSS counts every page a process maps, shared library code read from disk included (clangd maps about 80 MB of LLVM); private is what it allocated itself. Load at the end: {}.",
        load_average()
    );
}

/// One server's memory, as the daemon reports it and as /proc splits it.
struct ServerMemory {
    name: String,
    rss_kib: u64,
    private_kib: u64,
    processes: usize,
}

struct Measured {
    servers: Vec<ServerMemory>,
    daemon_kib: u64,
    daemon_private_kib: u64,
    errors: u64,
}

/// Checks the project through a fresh daemon, waits for its servers to
/// settle, and reads their memory.
fn measure(root: &Path) -> Option<Measured> {
    stop_daemon(root);
    let output = Command::new(CLI)
        .args(["check", "--json", "--no-ast-grep"])
        .env("CLAUDE_PROJECT_DIR", root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let errors = report["summary"]["errors"].as_u64().unwrap_or(0);
    settle(root);
    let status = daemon_status(root)?;
    let table = process_table();
    let servers = status["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|server| {
            let pid = server["pid"].as_u64().unwrap_or(0) as u32;
            let tree = tree(&table, pid);
            ServerMemory {
                name: server["name"].as_str().unwrap_or("?").to_string(),
                rss_kib: server["rss_kib"].as_u64().unwrap_or(0),
                private_kib: tree.iter().map(|p| p.anon_kib).sum(),
                processes: tree.len(),
            }
        })
        .collect();
    let daemon_pid = status["pid"].as_u64().unwrap_or(0) as u32;
    let measured = Measured {
        servers,
        daemon_kib: status["rss_kib"].as_u64().unwrap_or(0),
        daemon_private_kib: table.get(&daemon_pid).map_or(0, |p| p.anon_kib),
        errors,
    };
    stop_daemon(root);
    Some(measured)
}

/// Waits until the daemon's tree stops growing or shrinking (two readings
/// a second apart within 2 %, after at least 3 s), at most 60 s: a server's
/// background work (rust-analyzer's `cargo check`, a project load) ends
/// first.
fn settle(root: &Path) {
    let started = Instant::now();
    let mut last = 0u64;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let Some(status) = daemon_status(root) else {
            return;
        };
        let now = status["tree_rss_kib"].as_u64().unwrap_or(0);
        let steady = now.abs_diff(last) * 50 <= now;
        let busy =
            status["servers"].as_array().into_iter().flatten().any(|s| {
                s["busy"] == true || s["warming"] == true || !s["project_check"].is_null()
            });
        if (steady && !busy && started.elapsed() >= Duration::from_secs(3))
            || started.elapsed() > Duration::from_secs(60)
        {
            return;
        }
        last = now;
    }
}

/// One process as /proc tells it.
struct Proc {
    ppid: u32,
    anon_kib: u64,
}

fn process_table() -> HashMap<u32, Proc> {
    let mut table = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        };
        table.insert(
            pid,
            Proc {
                ppid: field("PPid:").unwrap_or(0) as u32,
                anon_kib: field("RssAnon:").unwrap_or(0),
            },
        );
    }
    table
}

/// `root` and every process below it.
fn tree(table: &HashMap<u32, Proc>, root: u32) -> Vec<&Proc> {
    let mut pids = vec![root];
    let mut index = 0;
    while index < pids.len() {
        let parent = pids[index];
        pids.extend(
            table
                .iter()
                .filter(|(pid, p)| p.ppid == parent && **pid != parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    pids.iter().filter_map(|pid| table.get(pid)).collect()
}

// --- the small projects: each writes its files into `root` and says
// whether its server is installed ---

fn python_pyright(root: &Path) -> bool {
    std::fs::write(root.join("pyrightconfig.json"), "{}").unwrap();
    python_files(root);
    which("pyright-langserver").is_some()
}

fn python_ty(root: &Path) -> bool {
    std::fs::write(root.join("ty.toml"), "").unwrap();
    python_files(root);
    which("ty").is_some()
}

fn python_files(root: &Path) {
    std::fs::write(
        root.join("helpers.py"),
        "import json\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n    x: int\n    y: int\n\n\ndef load(text: str) -> Point:\n    data = json.loads(text)\n    return Point(data[\"x\"], data[\"y\"])\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.py"),
        "from helpers import load\n\npoint = load('{\"x\": 1, \"y\": 2}')\nname: str = point.x\n",
    )
    .unwrap();
}

fn typescript_files(root: &Path) {
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "esnext", "moduleResolution": "bundler"}}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("shapes.ts"),
        "export interface Shape { area(): number }\nexport class Square implements Shape {\n  constructor(private side: number) {}\n  area(): number { return this.side * this.side; }\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.ts"),
        "import { Square } from './shapes';\n\nconst total: string = new Square(2).area();\nconsole.log(total);\n",
    )
    .unwrap();
}

fn typescript5(root: &Path) -> bool {
    typescript_files(root);
    which("typescript-language-server").is_some()
}

fn typescript7(root: &Path, typescript: &Path) -> bool {
    typescript_files(root);
    if !typescript.join("package.json").is_file() {
        return false;
    }
    std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
    let _ = std::os::unix::fs::symlink(typescript, root.join("node_modules/typescript"));
    let _ = std::os::unix::fs::symlink(
        typescript.join("bin/tsc"),
        root.join("node_modules/.bin/tsc"),
    );
    true
}

fn c_project(root: &Path) -> bool {
    std::fs::write(root.join("compile_flags.txt"), "-std=c11\n").unwrap();
    std::fs::write(
        root.join("util.h"),
        "#include <stddef.h>\nsize_t count_words(const char *text);\n",
    )
    .unwrap();
    std::fs::write(
        root.join("util.c"),
        "#include <ctype.h>\n#include \"util.h\"\nsize_t count_words(const char *text) {\n  size_t n = 0; int in = 0;\n  for (; *text; text++) { if (isspace((unsigned char)*text)) in = 0; else if (!in) { in = 1; n++; } }\n  return n;\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.c"),
        "#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"%zu\\n\", count_words(\"a b\")); return undefined_var; }\n",
    )
    .unwrap();
    which("clangd").is_some()
}

fn rust_project(root: &Path) -> bool {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "use std::collections::HashMap;\n\nfn main() {\n    let mut counts: HashMap<String, usize> = HashMap::new();\n    *counts.entry(\"a\".to_string()).or_default() += 1;\n    let total: String = counts.len();\n    println!(\"{total}\");\n}\n",
    )
    .unwrap();
    which("rust-analyzer").is_some()
        && Command::new("rust-analyzer")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn go_project(root: &Path) -> bool {
    std::fs::write(root.join("go.mod"), "module bench\n\ngo 1.19\n").unwrap();
    std::fs::write(
        root.join("main.go"),
        "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar total string = 1\n\tfmt.Println(total)\n}\n",
    )
    .unwrap();
    which("gopls").is_some()
}

// --- the daemon ---

fn daemon_status(root: &Path) -> Option<Value> {
    let output = Command::new(CLI)
        .args(["daemon", "status", "--json"])
        .env("CLAUDE_PROJECT_DIR", root)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let value: Value = serde_json::from_slice(&output.stdout).ok()?;
    (value["running"] == true).then(|| value["status"].clone())
}

fn stop_daemon(root: &Path) {
    let _ = Command::new(CLI)
        .args(["daemon", "stop"])
        .env("CLAUDE_PROJECT_DIR", root)
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn test_cache() -> PathBuf {
    std::env::var_os("RALPH_HOOKS_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ralph-hooks"))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

fn temp_dir(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ralph-bench-memory-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn mb(kib: u64) -> String {
    format!("{:.0} MB", kib as f64 / 1024.0)
}
