//! Skipped tests are said where nobody can miss them: a test that cannot
//! run its real part here (no `claude`, a language server missing) calls
//! [`record`], and when the test binary exits the list is printed on its
//! stderr after cargo's `test result:` line, one line per reason.
//!
//! Cargo's test harness captures what a test prints, so a skip message
//! from inside a test is only seen with `--nocapture`. The summary is
//! written by an `atexit` handler straight to file descriptor 2, past the
//! capture, so plain `cargo test` shows it. Each skip is also written to
//! `target/tmp/skipped/<pid>.txt`, one line each: `.ci/run` clears that
//! folder before the run and fails when anything is in it afterwards.

use std::path::PathBuf;
use std::sync::{Mutex, Once};

/// `(what, why, how many tests)`, in the order first seen.
static SKIPPED: Mutex<Vec<(String, String, usize)>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

/// The folder `.ci/run` looks in.
pub fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped")
}

/// Records that `what` (a suite or test, in words) did not run here, and why.
pub fn record(what: &str, why: &str) {
    // The test's own output: shown with --nocapture, or when it fails.
    eprintln!("skipping {what}: {why} (set RALPH_HOOKS_REQUIRE_SERVERS=1 to make this a failure)");
    {
        let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
        match skipped
            .iter_mut()
            .find(|(w, y, _)| w.as_str() == what && y.as_str() == why)
        {
            Some(entry) => entry.2 += 1,
            None => skipped.push((what.to_string(), why.to_string(), 1)),
        }
    }
    let folder = folder();
    if std::fs::create_dir_all(&folder).is_ok()
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(folder.join(format!("{}.txt", std::process::id())))
    {
        let _ = std::io::Write::write_all(&mut file, format!("{what}: {why}\n").as_bytes());
    }
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function with no captured state.
        unsafe { libc::atexit(print_summary) };
    });
}

/// The summary, as it is printed at exit.
pub fn summary() -> Option<String> {
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if skipped.is_empty() {
        return None;
    }
    let mut text = format!(
        "\nSKIPPED: this run did not test everything ({} reason(s)); it is not a full pass:\n",
        skipped.len()
    );
    for (what, why, count) in skipped.iter() {
        let tests = if *count == 1 {
            String::new()
        } else {
            format!(" ({count} tests)")
        };
        text.push_str(&format!("  SKIPPED {what}{tests}: {why}\n"));
    }
    text.push_str(
        "Install what is missing (.ci/install-*.sh) or set RALPH_HOOKS_REQUIRE_SERVERS=1 to make a skip fail; .ci/run fails on any skip.\n",
    );
    Some(text)
}

extern "C" fn print_summary() {
    if let Some(text) = summary() {
        // Straight to the descriptor: the harness's capture is not in the way.
        // SAFETY: writes a live buffer of the given length to fd 2.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    }
}
