//! `ralph-hooks refs/rename/search/rewrite`, each beside its
//! baseline:
//! - warm `refs` and `rename` preview (the whole CLI process, through the
//!   daemon's warm pyright) on a 200-file Python project, beside pyright's
//!   own time for the same request on a live client in this process
//!   (target: ≤ 1.2× + 10 ms);
//! - `search` and `rewrite` dry-run over 1,000 JavaScript files (files/s),
//!   beside the `ast-grep` CLI on the same tree (target: not slower).
//!
//! Run with `cargo bench --bench intel` (release build). `BENCH_RUNS=N`
//! changes the runs per cell (default 7; medians are printed). A missing
//! pyright or ast-grep skips its rows with the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ralph_hooks::hook::config::Config;
use ralph_hooks::lsp::client::Client;
use ralph_hooks::lsp::servers::{Registry, Selection, workspace_root};
use ralph_hooks::lsp::{OpenFile, uri};
use serde_json::json;

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");
const PY_FILES: usize = 200;
const JS_FILES: usize = 1000;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let base = std::env::temp_dir().join(format!("ralph-bench-intel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    println!("ralph-hooks intel benchmark ({runs} runs per cell, medians)\n");
    println!("| what | ralph-hooks | baseline | ratio |");
    println!("|---|---:|---:|---:|");
    match lsp_rows(&base.join("py"), runs) {
        Ok(()) => {}
        Err(why) => println!("| refs / rename | skipped: {why} | | |"),
    }
    structural_rows(&base.join("js"), runs);
    let _ = std::fs::remove_dir_all(&base);
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn cli(project: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(CLI);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CLAUDE") || key.starts_with("RALPH_HOOKS") {
            command.env_remove(key);
        }
    }
    command
        .args(args)
        .env("CLAUDE_PROJECT_DIR", project)
        .current_dir(project)
        .stdin(Stdio::null())
        .output()
        .expect("run ralph-hooks")
}

fn timed(runs: usize, mut once: impl FnMut() -> bool) -> Result<Duration, String> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        if !once() {
            return Err("a run failed".into());
        }
        times.push(started.elapsed());
    }
    Ok(median(times))
}

// --- refs and rename on 200 Python files ---

fn python_project(dir: &Path) {
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join("utils.py"),
        "def helper(x: int) -> int:\n    return x + 1\n",
    )
    .unwrap();
    for n in 0..PY_FILES - 1 {
        std::fs::write(
            dir.join(format!("mod_{n:03}.py")),
            format!(
                "from utils import helper\n\n\ndef f_{n}(value: int) -> int:\n    total = helper(value)\n    return helper(total) * {n}\n"
            ),
        )
        .unwrap();
    }
}

fn lsp_rows(dir: &Path, runs: usize) -> Result<(), String> {
    which::which("pyright-langserver").map_err(|_| "pyright-langserver not on PATH")?;
    python_project(dir);
    let expected = format!("{} references", 1 + 3 * (PY_FILES - 1));
    // Warm up: the daemon starts pyright and pyright indexes the project;
    // two more runs so neither side is measured on its first requests.
    let first = cli(dir, &["refs", "utils.py", "helper"]);
    for _ in 0..2 {
        cli(dir, &["refs", "utils.py", "helper"]);
        cli(dir, &["rename", "utils.py", "helper", "assist"]);
    }
    let text = String::from_utf8_lossy(&first.stdout);
    if !text.contains(&expected) {
        stop_daemon(dir);
        return Err(format!(
            "the first refs did not see {expected}: {text} {}",
            String::from_utf8_lossy(&first.stderr)
        ));
    }
    let refs = timed(runs, || {
        String::from_utf8_lossy(&cli(dir, &["refs", "utils.py", "helper"]).stdout)
            .contains(&expected)
    });
    let rename = timed(runs, || {
        cli(dir, &["rename", "utils.py", "helper", "assist"])
            .status
            .success()
    });
    stop_daemon(dir);
    let (own_refs, own_rename) = own_times(dir, runs)?;
    let refs = refs?;
    let rename = rename?;
    row("refs, warm, 200 Python files (pyright)", refs, own_refs);
    row(
        "rename preview, warm, 200 Python files (pyright)",
        rename,
        own_rename,
    );
    Ok(())
}

fn row(what: &str, ours: Duration, baseline: Duration) {
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64().max(1e-9);
    let target = baseline.mul_f64(1.2) + Duration::from_millis(10);
    println!(
        "| {what} | {} | {} (pyright's own, live client) | {ratio:.2}× (target ≤ {}) |",
        ms(ours),
        ms(baseline),
        ms(target)
    );
}

fn stop_daemon(dir: &Path) {
    let _ = cli(dir, &["daemon", "stop"]);
}

/// pyright's own time for `references` and `rename` on a live client in
/// this process, with utils.py open and the project indexed.
fn own_times(dir: &Path, runs: usize) -> Result<(Duration, Duration), String> {
    let file = dir.join("utils.py");
    let config = Config::load(dir).map_err(|e| format!("{e:#}"))?;
    let registry = Registry::load(dir, &config);
    let (launch, language_id) = match registry.select(&file, dir) {
        Selection::Found {
            server,
            program,
            language_id,
            ..
        } => (
            server.launch(program, workspace_root(server, &file, dir), dir),
            language_id,
        ),
        _ => return Err("no installed server for utils.py".into()),
    };
    let deadline = || Instant::now() + Duration::from_secs(120);
    let mut client = Client::start(&launch, deadline()).map_err(|e| e.to_string())?;
    let open = vec![OpenFile {
        path: file.clone(),
        text: std::fs::read_to_string(&file).unwrap(),
        language_id,
    }];
    let position = json!({"textDocument": {"uri": uri::from_path(&file)}, "position": {"line": 0, "character": 4}});
    let mut references = position.clone();
    references["context"] = json!({"includeDeclaration": true});
    let mut rename = position;
    rename["newName"] = json!("assist");
    // Warm up (indexing), as the daemon was.
    for params in [&references, &references, &references, &rename, &rename] {
        let method = if params.get("newName").is_some() {
            "textDocument/rename"
        } else {
            "textDocument/references"
        };
        client
            .call(&open, method, (*params).clone(), deadline())
            .map_err(|e| e.to_string())?;
    }
    let mut time = |method: &str, params: &serde_json::Value| {
        timed(runs, || {
            client
                .call(&open, method, params.clone(), deadline())
                .is_ok_and(|answer| !answer.result.is_null())
        })
    };
    let own_refs = time("textDocument/references", &references)?;
    let own_rename = time("textDocument/rename", &rename)?;
    client.shutdown(Duration::from_secs(1));
    Ok((own_refs, own_rename))
}

// --- search and rewrite on 1,000 JavaScript files ---

fn js_project(dir: &Path) {
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    for n in 0..JS_FILES {
        let sub = dir.join(format!("src/part{}", n % 10));
        std::fs::create_dir_all(&sub).unwrap();
        let mut text = String::new();
        for k in 0..8 {
            text.push_str(&format!(
                "export function f{n}_{k}(user, items) {{\n  const total = items.reduce((a, b) => a + b, {k});\n  console.log(\"total\", total);\n  if (user.debug) {{\n    console.log(total);\n  }}\n  return compute(user, total, {n});\n}}\n\n"
            ));
        }
        std::fs::write(sub.join(format!("m{n:04}.js")), text).unwrap();
    }
}

fn structural_rows(dir: &Path, runs: usize) {
    js_project(dir);
    let pattern = "console.log($MSG)";
    let replacement = "logger.debug($MSG)";
    let per_second = |d: Duration| format!("{:.0} files/s", JS_FILES as f64 / d.as_secs_f64());
    let ours_search = timed(runs, || {
        cli(dir, &["search", pattern, "--json", "src"])
            .status
            .success()
    });
    let ours_rewrite = timed(runs, || {
        cli(dir, &["rewrite", pattern, replacement, "src"])
            .status
            .success()
    });
    let ast_grep: Option<PathBuf> = which::which("ast-grep").ok();
    let theirs = |args: &[&str]| {
        let program = ast_grep.clone()?;
        timed(runs, || {
            Command::new(&program)
                .args(args)
                .current_dir(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
        .ok()
    };
    let their_search = theirs(&["run", "-p", pattern, "-l", "js", "--json=compact", "src"]);
    let their_rewrite = theirs(&["run", "-p", pattern, "-r", replacement, "-l", "js", "src"]);
    for (what, ours, theirs) in [
        ("search, 1,000 JS files", ours_search, their_search),
        (
            "rewrite dry-run, 1,000 JS files",
            ours_rewrite,
            their_rewrite,
        ),
    ] {
        let Ok(ours) = ours else {
            println!("| {what} | failed | | |");
            continue;
        };
        match theirs {
            Some(theirs) => println!(
                "| {what} | {} ({}) | {} ({}) (ast-grep CLI) | {:.2}× the time (target ≤ 1.00×) |",
                ms(ours),
                per_second(ours),
                ms(theirs),
                per_second(theirs),
                ours.as_secs_f64() / theirs.as_secs_f64()
            ),
            None => println!(
                "| {what} | {} ({}) | skipped: ast-grep not on PATH | |",
                ms(ours),
                per_second(ours)
            ),
        }
    }
}
