//! Progress on stderr for the commands that can take a while (`check`,
//! `loop start`'s first check, `fix`, `rename`, `search`, `rewrite`,
//! `install`): a spinner while the amount of work is unknown, then a bar of
//! files done, shown only once the work has taken longer than about a
//! second and only when stderr is a terminal. Never in a pipe, never with
//! `--json`, never in a hook (the hooks do not link this).
//!
//! `RALPH_HOOKS_PROGRESS_AFTER_MS` changes the one-second wait (0 shows it
//! at once).

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DEFAULT_AFTER: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(120);

/// Whether a command may show progress: stderr is a terminal and its output
/// is not JSON.
pub fn wanted(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// One piece of work's progress; cleared from the terminal when finished
/// or dropped.
pub struct Progress {
    shown: Option<Shown>,
}

struct Shown {
    bar: ProgressBar,
    /// Set when the work is over, so a late reveal or update draws nothing.
    finished: Arc<Mutex<bool>>,
    reveal: Mutex<Option<JoinHandle<()>>>,
}

impl Progress {
    /// Nothing at all: for pipes and JSON.
    pub fn hidden() -> Progress {
        Progress { shown: None }
    }

    /// Starts counting `what` (e.g. "checking"); appears after the wait
    /// when `enabled`.
    pub fn start(what: &str, enabled: bool) -> Progress {
        if !enabled {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(spinner_style());
        bar.set_message(what.to_string());
        let finished = Arc::new(Mutex::new(false));
        let reveal = {
            let bar = bar.clone();
            let finished = finished.clone();
            let after = wait_before_showing();
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    let deadline = Instant::now() + after;
                    loop {
                        if *lock(&finished) {
                            return;
                        }
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        std::thread::park_timeout(deadline - now);
                    }
                    let finished = lock(&finished);
                    if !*finished {
                        bar.set_draw_target(ProgressDrawTarget::stderr());
                        bar.enable_steady_tick(TICK);
                    }
                })
                .ok()
        };
        Progress {
            shown: Some(Shown {
                bar,
                finished,
                reveal: Mutex::new(reveal),
            }),
        }
    }

    /// `done` of `total` files.
    pub fn set(&self, done: usize, total: usize) {
        let Some(shown) = self.live() else {
            return;
        };
        let total = total as u64;
        if shown.bar.length() != Some(total) {
            shown.bar.set_length(total);
            shown.bar.set_style(bar_style());
        }
        shown.bar.set_position(done as u64);
    }

    /// A new label for the next stage ("re-checking").
    pub fn stage(&self, what: &str) {
        if let Some(shown) = self.live() {
            shown.bar.set_message(what.to_string());
        }
    }

    /// Clears the bar, so what the command prints next starts on a clean
    /// line; later updates draw nothing.
    pub fn finish(&self) {
        let Some(shown) = &self.shown else {
            return;
        };
        {
            let mut finished = lock(&shown.finished);
            if *finished {
                return;
            }
            *finished = true;
        }
        if let Some(reveal) = lock(&shown.reveal).take() {
            reveal.thread().unpark();
            let _ = reveal.join();
        }
        if shown.bar.length().is_some() && !shown.bar.is_hidden() {
            // A count is drawn at most a few times a second: work that
            // finished between two draws shows its last count once (a
            // forced draw) before the line is cleared.
            shown.bar.finish();
        }
        shown.bar.finish_and_clear();
    }

    fn live(&self) -> Option<&Shown> {
        self.shown.as_ref().filter(|shown| !*lock(&shown.finished))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A poisoned lock still holds a usable flag.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|error| error.into_inner())
}

fn wait_before_showing() -> Duration {
    std::env::var("RALPH_HOOKS_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(DEFAULT_AFTER, Duration::from_millis)
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg}… {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} files {elapsed}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_progress_does_nothing_and_ends_at_once() {
        let progress = Progress::start("checking", false);
        progress.set(1, 2);
        progress.finish();
    }

    #[test]
    fn a_short_piece_of_work_finishes_before_the_reveal() {
        let started = Instant::now();
        let progress = Progress::start("checking", true);
        progress.set(1, 3);
        progress.finish();
        progress.set(2, 3);
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "finishing waits for nothing"
        );
    }
}
