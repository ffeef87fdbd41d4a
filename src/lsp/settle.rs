//! When are a file's diagnostics final? Pure decision logic, so the rule can
//! be tested without a server.
//!
//! LSP has no "done" signal for pushed diagnostics: each
//! `publishDiagnostics` replaces the previous set, and servers publish an
//! empty or partial set before the real one (typescript-language-server,
//! rust-analyzer; `shared/reference/language-servers.md` §3, §6). The rule:
//! - keep the latest publish that belongs to our document version (same
//!   version, or no version and sent after our change);
//! - wait until nothing new arrived for a quiet window, no work-done
//!   progress is open, no pull is in flight, and an awaited progress (the
//!   flycheck "cargo check" of rust-analyzer) has run to its end;
//! - in pull mode the pull response replaces the need for a push;
//! - never settle without any result: no publish is not "clean".

use std::time::{Duration, Instant};

/// Everything the rule looks at, gathered by the client.
#[derive(Debug, Clone, Default)]
pub struct SettleState {
    /// Pull diagnostics are in use for this document.
    pub pull: bool,
    /// When the latest accepted publish arrived.
    pub last_push: Option<Instant>,
    /// When the latest pull response arrived (none in flight since).
    pub last_pull: Option<Instant>,
    /// A pull request is in flight (sent, or to be re-sent after a refresh).
    pub pull_in_flight: bool,
    /// Work-done progress tokens begun and not yet ended.
    pub open_progress: usize,
    /// When the latest progress ended.
    pub last_progress_end: Option<Instant>,
    /// The configured progress (by title) has not yet begun and ended since
    /// our change.
    pub awaited_progress_pending: bool,
    /// The only result so far is a first empty publish without a version,
    /// which may be a placeholder: it needs [`PROVISIONAL_FACTOR`] times the
    /// quiet window.
    pub provisional: bool,
}

/// How much longer a provisional result must stay unchanged.
pub const PROVISIONAL_FACTOR: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The latest result is final.
    Done,
    /// Nothing can settle before this instant; wake then unless a message comes first.
    WaitUntil(Instant),
    /// Only a message from the server can change anything.
    WaitForMessage,
}

pub fn decide(state: &SettleState, quiet: Duration, now: Instant) -> Settle {
    if state.open_progress > 0 || state.pull_in_flight || state.awaited_progress_pending {
        return Settle::WaitForMessage;
    }
    let result_at = if state.pull {
        state.last_pull
    } else {
        state.last_push
    };
    let Some(result_at) = result_at else {
        return Settle::WaitForMessage;
    };
    let last_activity = [Some(result_at), state.last_push, state.last_progress_end]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(result_at);
    let quiet = if state.provisional {
        quiet * PROVISIONAL_FACTOR
    } else {
        quiet
    };
    let quiet_until = last_activity + quiet;
    if now >= quiet_until {
        Settle::Done
    } else {
        Settle::WaitUntil(quiet_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(150);

    fn check(state: SettleState, now_after_ms: u64, base: Instant) -> Settle {
        decide(&state, QUIET, base + Duration::from_millis(now_after_ms))
    }

    #[test]
    fn nothing_published_is_never_done() {
        let base = Instant::now();
        assert_eq!(
            check(SettleState::default(), 10_000, base),
            Settle::WaitForMessage
        );
    }

    #[test]
    fn a_publish_settles_after_the_quiet_window() {
        let base = Instant::now();
        let state = SettleState {
            last_push: Some(base),
            ..SettleState::default()
        };
        assert_eq!(
            check(state.clone(), 100, base),
            Settle::WaitUntil(base + QUIET)
        );
        assert_eq!(check(state, 150, base), Settle::Done);
    }

    #[test]
    fn a_first_empty_unversioned_publish_waits_longer() {
        let base = Instant::now();
        let state = SettleState {
            last_push: Some(base),
            provisional: true,
            ..SettleState::default()
        };
        assert_eq!(
            check(state, 200, base),
            Settle::WaitUntil(base + QUIET * PROVISIONAL_FACTOR)
        );
    }

    #[test]
    fn open_progress_holds_even_after_quiet() {
        let base = Instant::now();
        let state = SettleState {
            last_push: Some(base),
            open_progress: 1,
            ..SettleState::default()
        };
        assert_eq!(check(state, 5_000, base), Settle::WaitForMessage);
    }

    #[test]
    fn progress_end_restarts_the_quiet_window() {
        let base = Instant::now();
        let state = SettleState {
            last_push: Some(base),
            last_progress_end: Some(base + Duration::from_millis(1_000)),
            ..SettleState::default()
        };
        assert_eq!(
            check(state, 1_100, base),
            Settle::WaitUntil(base + Duration::from_millis(1_150))
        );
    }

    #[test]
    fn awaited_progress_holds_until_it_ran() {
        let base = Instant::now();
        let state = SettleState {
            last_push: Some(base),
            awaited_progress_pending: true,
            ..SettleState::default()
        };
        assert_eq!(check(state, 9_000, base), Settle::WaitForMessage);
    }

    #[test]
    fn pull_mode_needs_the_pull_not_a_push() {
        let base = Instant::now();
        let pushed_only = SettleState {
            pull: true,
            last_push: Some(base),
            ..SettleState::default()
        };
        assert_eq!(check(pushed_only, 1_000, base), Settle::WaitForMessage);
        let pulled = SettleState {
            pull: true,
            last_pull: Some(base),
            ..SettleState::default()
        };
        assert_eq!(check(pulled, 150, base), Settle::Done);
        let refreshed = SettleState {
            pull: true,
            last_pull: Some(base),
            pull_in_flight: true,
            ..SettleState::default()
        };
        assert_eq!(check(refreshed, 1_000, base), Settle::WaitForMessage);
    }

    #[test]
    fn a_later_push_in_pull_mode_extends_the_window() {
        let base = Instant::now();
        let state = SettleState {
            pull: true,
            last_pull: Some(base),
            last_push: Some(base + Duration::from_millis(100)),
            ..SettleState::default()
        };
        assert_eq!(
            check(state, 200, base),
            Settle::WaitUntil(base + Duration::from_millis(250))
        );
    }
}
