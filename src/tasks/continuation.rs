//! Task-step and todo continuation at Stop, when no Ralph loop runs (seed
//! 002 §10, the "self-driving loop"): while the active task has open steps,
//! or Claude Code's own todo list has open items, the stop is blocked with
//! the checklist and Claude goes on.
//!
//! Limits, so a stuck agent is not driven forever:
//! - at most `max_consecutive` (20) continuations in a row; the count starts
//!   again when a step is finished (done or skipped, past the best so far in
//!   this run) or on a fresh user turn (`stop_hook_active: false`);
//! - `stall_after` (3) continuations in a row in which no step changed state
//!   at all end the run as stalled: the stop is allowed, the user is told,
//!   and it is recorded (`continuation.json`, `events.jsonl`);
//! - running `background_tasks` and plan mode hold: the stop is allowed
//!   without counting.
//!
//! Why two counters: "no change at all" catches an idle agent within three
//! turns, and the ceiling catches one that keeps shuffling steps (starting,
//! re-opening, adding) without finishing any. An agent that finishes a step
//! every turn is never stopped, however long the list.
//!
//! The decision ([`decide`]) is pure; [`on_stop`] gathers the facts, keeps
//! the counters in `continuation.json` through the Store, and logs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, StopInput};
use crate::state::Versioned;
use crate::tasks::todos::{self, TodoList, TodoSource, TodoStatus};
use crate::tasks::{self, StepsProgress, TaskDoc};
use crate::util::text::fnv1a;

pub const STATE_FILE: &str = "continuation.json";

/// Counters of sessions not seen for this long are dropped on the next save.
const FORGET_AFTER_DAYS: i64 = 7;

/// The `continuation` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContinuationConfig {
    /// Continue open task steps.
    pub steps: bool,
    /// Continue open items of Claude Code's own todo list.
    pub todos: bool,
    /// The most continuations in a row.
    pub max_consecutive: u32,
    /// Continuations in a row without any step changing that end it as
    /// stalled; 0 turns stall detection off.
    pub stall_after: u32,
}

impl Default for ContinuationConfig {
    fn default() -> Self {
        ContinuationConfig {
            steps: true,
            todos: true,
            max_consecutive: 20,
            stall_after: 3,
        }
    }
}

/// `continuation.json`: one counter per session.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ContinuationState {
    #[serde(default)]
    pub version: u64,
    #[serde(default)]
    pub sessions: BTreeMap<String, Counter>,
    /// Sessions whose user said "stop" (issue 12), with when: continuation
    /// holds for them until their next prompt that is not a stop phrase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paused: BTreeMap<String, DateTime<Utc>>,
}

impl Versioned for ContinuationState {
    const VERSION: u64 = 1;
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    /// `steps` or `todos`.
    pub source: String,
    /// The task id, or `todos`.
    pub subject: String,
    /// Continuations in a row since a step was last finished or the user
    /// last spoke: the `n` of `[SELF-DRIVING n/20]`.
    pub consecutive: u32,
    /// Continuations in a row since the checklist last changed at all.
    pub unchanged: u32,
    /// The checklist's statuses at the last stop.
    pub fingerprint: String,
    /// The most steps finished (done or skipped) seen in this run.
    pub best_closed: usize,
    /// Why the run ended (`stalled`, `max_consecutive`), until the user
    /// speaks again or the checklist changes.
    #[serde(default)]
    pub stopped: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// What this stop found open.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub source: &'static str,
    pub subject: String,
    pub fingerprint: String,
    pub closed: usize,
    pub open: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_consecutive: u32,
    pub stall_after: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Block; this is continuation number `n`.
    Continue(u32),
    /// Allow and tell the user: no step changed in `stall_after` continuations.
    Stalled,
    /// Allow and tell the user: `max_consecutive` reached.
    Capped,
    /// The run already ended and nothing changed since: allow quietly.
    AlreadyStopped,
}

/// The pure decision: the previous counter, what is open now, and whether
/// Claude is already continuing because of a Stop hook.
pub fn decide(
    previous: Option<&Counter>,
    seen: &Observation,
    stop_hook_active: bool,
    limits: Limits,
    now: DateTime<Utc>,
) -> (Counter, Verdict) {
    let same_subject = |c: &&Counter| c.source == seen.source && c.subject == seen.subject;
    let mut counter = match previous.filter(same_subject) {
        Some(counter) => counter.clone(),
        None => Counter {
            source: seen.source.to_string(),
            subject: seen.subject.clone(),
            fingerprint: seen.fingerprint.clone(),
            best_closed: seen.closed,
            ..Counter::default()
        },
    };
    if !stop_hook_active {
        // A fresh user turn: whatever ended the last run, the user has spoken.
        counter.consecutive = 0;
        counter.unchanged = 0;
        counter.stopped = None;
        counter.best_closed = seen.closed;
    } else {
        // Any change ends a stall; only a finished step lifts the ceiling.
        if seen.fingerprint != counter.fingerprint {
            counter.unchanged = 0;
            if counter.stopped.as_deref() == Some("stalled") {
                counter.stopped = None;
            }
        }
        if seen.closed > counter.best_closed {
            counter.consecutive = 0;
            counter.best_closed = seen.closed;
            counter.stopped = None;
        }
    }
    counter.fingerprint = seen.fingerprint.clone();
    counter.updated_at = now;
    if counter.stopped.is_some() {
        return (counter, Verdict::AlreadyStopped);
    }
    if limits.stall_after > 0 && counter.unchanged >= limits.stall_after {
        counter.stopped = Some("stalled".into());
        return (counter, Verdict::Stalled);
    }
    if counter.consecutive >= limits.max_consecutive {
        counter.stopped = Some("max_consecutive".into());
        return (counter, Verdict::Capped);
    }
    counter.consecutive += 1;
    counter.unchanged += 1;
    let n = counter.consecutive;
    (counter, Verdict::Continue(n))
}

/// What is open and how to say it.
enum Open {
    Steps(Box<TaskDoc>),
    Todos(TodoList),
}

impl Open {
    fn observation(&self) -> Observation {
        match self {
            Open::Steps(doc) => {
                let progress = StepsProgress::of(doc.steps());
                let shape: String = doc
                    .steps()
                    .iter()
                    .map(|s| format!("{}:{};", s.id, s.status.as_str()))
                    .collect();
                Observation {
                    source: "steps",
                    subject: doc.id.clone(),
                    fingerprint: format!("{:016x}", fnv1a(shape.as_bytes())),
                    closed: progress.closed(),
                    open: progress.open(),
                }
            }
            Open::Todos(list) => {
                let shape: String = list
                    .items
                    .iter()
                    .map(|i| format!("{}\u{1f}{}\u{1e}", i.content, i.status.as_str()))
                    .collect();
                let closed = list
                    .items
                    .iter()
                    .filter(|i| i.status == TodoStatus::Completed)
                    .count();
                Observation {
                    source: "todos",
                    subject: "todos".into(),
                    fingerprint: format!("{:016x}", fnv1a(shape.as_bytes())),
                    closed,
                    open: list.open().len(),
                }
            }
        }
    }

    fn subject_label(&self) -> String {
        match self {
            Open::Steps(doc) => format!("task {}", doc.id),
            Open::Todos(_) => "your todo list".into(),
        }
    }
}

/// Called by the Stop hook when no loop runs for this session.
pub fn on_stop(ctx: &Ctx, stop: &StopInput) -> anyhow::Result<HookOutput> {
    if stop.common.agent_id.is_some() {
        return Ok(HookOutput::silent());
    }
    let config = match ctx.config().section::<ContinuationConfig>("continuation") {
        Ok(config) => config,
        Err(error) => {
            // A typo in the config must not trap the user in a loop.
            eprintln!("ralph-stop-loop-controller: continuation is off: {error:#}");
            return Ok(HookOutput::silent());
        }
    };
    let session = ctx.session_id.clone().unwrap_or_default();
    if paused_by_user(ctx)? {
        ctx.debug(format_args!(
            "the user said stop in session {session:?}: continuation is paused until their next prompt"
        ));
        return Ok(HookOutput::silent());
    }
    let open = find_open(ctx, stop, &config)?;
    let Some(open) = open else {
        forget(ctx, &session)?;
        return Ok(HookOutput::silent());
    };
    let running = stop.running_background_tasks();
    if running > 0 {
        ctx.debug(format_args!(
            "{running} background task(s) running: holding the stop without counting"
        ));
        return Ok(HookOutput::silent());
    }
    if stop.common.permission_mode.as_deref() == Some("plan") {
        ctx.debug(format_args!(
            "plan mode: steps cannot be worked on, not continuing"
        ));
        return Ok(HookOutput::silent());
    }
    let seen = open.observation();
    let limits = Limits {
        max_consecutive: config.max_consecutive.max(1),
        stall_after: config.stall_after,
    };
    let store = ctx.store();
    let locked = store.lock(STATE_FILE)?;
    let mut state = locked.load_json::<ContinuationState>()?.unwrap_or_default();
    let (counter, verdict) = decide(
        state.sessions.get(&session),
        &seen,
        stop.stop_hook_active,
        limits,
        ctx.now(),
    );
    ctx.debug(format_args!(
        "continuation {}: {} open, verdict {verdict:?}, counter {}/{} (unchanged {})",
        seen.subject, seen.open, counter.consecutive, limits.max_consecutive, counter.unchanged
    ));
    let consecutive = counter.consecutive;
    state.sessions.insert(session.clone(), counter);
    let horizon = ctx.now() - Duration::days(FORGET_AFTER_DAYS);
    state.sessions.retain(|_, c| c.updated_at >= horizon);
    locked.save_json(&state)?;
    drop(locked);

    let output = match verdict {
        Verdict::Continue(n) => {
            tasks::log(
                ctx,
                "continuation_event",
                &seen.subject,
                json!({"event": "self_driving_triggered", "consecutiveCount": n,
                       "remainingSteps": seen.open, "source": seen.source}),
            );
            HookOutput::block(prompt(&open, n, limits.max_consecutive)).with_system_message(
                format!(
                    "ralph-hooks: {} has {} open {}{} — continuing ({n}/{})",
                    open.subject_label(),
                    seen.open,
                    if seen.source == "steps" {
                        "step"
                    } else {
                        "item"
                    },
                    if seen.open == 1 { "" } else { "s" },
                    limits.max_consecutive
                ),
            )
        }
        Verdict::Stalled | Verdict::Capped => {
            let reason = if verdict == Verdict::Stalled {
                "stalled"
            } else {
                "max_consecutive"
            };
            tasks::log(
                ctx,
                "continuation_event",
                &seen.subject,
                json!({"event": "self_driving_stopped", "reason": reason, "consecutiveCount": consecutive,
                       "remainingSteps": seen.open, "source": seen.source}),
            );
            HookOutput::silent().with_system_message(stopped_message(&open, verdict, limits))
        }
        Verdict::AlreadyStopped => HookOutput::silent(),
    };
    Ok(output)
}

/// The active task with open steps for this session, else the session's
/// todo list with open items, else nothing.
fn find_open(
    ctx: &Ctx,
    stop: &StopInput,
    config: &ContinuationConfig,
) -> anyhow::Result<Option<Open>> {
    if config.steps
        && let Some(doc) = tasks::active(ctx.store())?
    {
        let open = tasks::steps::open_steps(&doc).len();
        let in_progress = doc.field("Status") == Some(tasks::IN_PROGRESS);
        match (doc.field("Session"), ctx.session_id.as_deref()) {
            (Some(owner), Some(session)) if owner != session => {
                ctx.debug(format_args!(
                    "task {} belongs to session {owner}, not {session}: not continuing it",
                    doc.id
                ));
            }
            // A blocked task waits for the user: nothing may drive this
            // session on, not even its todo list.
            _ if doc.field("Status") == Some(tasks::BLOCKED) => {
                ctx.debug(format_args!(
                    "task {} is blocked: waiting for the user, not continuing",
                    doc.id
                ));
                return Ok(None);
            }
            _ if open == 0 || !in_progress => {
                ctx.debug(format_args!(
                    "task {} is {} with {open} open steps: nothing to continue",
                    doc.id,
                    doc.field("Status").unwrap_or_default()
                ));
            }
            (owner, session) => {
                let doc = match (owner, session) {
                    // The first stop after a person started the task from a
                    // terminal binds it to this session, as loops are bound.
                    (None, Some(session)) => {
                        tasks::update(ctx, &doc.id, |doc| {
                            doc.set_field("Session", session);
                            Ok(())
                        })?
                        .0
                    }
                    _ => doc,
                };
                return Ok(Some(Open::Steps(Box::new(doc))));
            }
        }
    }
    if config.todos
        && let Some(path) = stop.common.transcript_path.as_deref()
        && let Some(list) = todos::current_list(Path::new(path))
    {
        ctx.debug(format_args!(
            "todo list from {:?}: {} items, {} open",
            list.source,
            list.items.len(),
            list.open().len()
        ));
        if !list.open().is_empty() {
            return Ok(Some(Open::Todos(list)));
        }
    }
    Ok(None)
}

/// Whether this session's user paused continuation with a stop phrase.
pub fn paused_by_user(ctx: &Ctx) -> anyhow::Result<bool> {
    let store = ctx.store();
    if !store.exists(STATE_FILE) {
        return Ok(false);
    }
    let session = ctx.session_id.clone().unwrap_or_default();
    Ok(store
        .read_json::<ContinuationState>(STATE_FILE)?
        .is_some_and(|state| state.paused.contains_key(&session)))
}

/// The user said a stop phrase: no continuation for this session until
/// their next ordinary prompt ([`lift_user_pause`]).
pub fn pause_for_user(ctx: &Ctx) -> anyhow::Result<()> {
    let session = ctx.session_id.clone().unwrap_or_default();
    let locked = ctx.store().lock(STATE_FILE)?;
    let mut state = locked.load_json::<ContinuationState>()?.unwrap_or_default();
    state.version = ContinuationState::VERSION;
    let now = ctx.now();
    // A session that said "stop" and was never heard from again.
    state
        .paused
        .retain(|_, at| now.signed_duration_since(*at) < Duration::days(FORGET_AFTER_DAYS));
    state.paused.insert(session, now);
    locked.save_json(&state)
}

/// An ordinary prompt: continuation may drive this session again. Returns
/// whether a pause was lifted. Reads before locking, so the usual prompt
/// (nothing paused) writes nothing.
pub fn lift_user_pause(ctx: &Ctx) -> anyhow::Result<bool> {
    if !paused_by_user(ctx)? {
        return Ok(false);
    }
    let session = ctx.session_id.clone().unwrap_or_default();
    let locked = ctx.store().lock(STATE_FILE)?;
    let Some(mut state) = locked.load_json::<ContinuationState>()? else {
        return Ok(false);
    };
    if state.paused.remove(&session).is_none() {
        return Ok(false);
    }
    locked.save_json(&state)?;
    Ok(true)
}

/// Nothing is open: the session's counter goes, so the next run starts at 1.
fn forget(ctx: &Ctx, session: &str) -> anyhow::Result<()> {
    let store = ctx.store();
    if !store.exists(STATE_FILE) {
        return Ok(());
    }
    let locked = store.lock(STATE_FILE)?;
    let Some(mut state) = locked.load_json::<ContinuationState>()? else {
        return Ok(());
    };
    if state.sessions.remove(session).is_some() {
        locked.save_json(&state)?;
    }
    Ok(())
}

/// The continuation prompt (seed 002 §10.4), headed `[SELF-DRIVING n/max]`.
fn prompt(open: &Open, n: u32, max: u32) -> String {
    let mut text = String::new();
    match open {
        Open::Steps(doc) => {
            let remaining = tasks::steps::open_steps(doc);
            let _ = writeln!(
                text,
                "[SELF-DRIVING {n}/{max}] Task \"{}\" ({}) — {} step{} remaining:\n",
                doc.description_text(),
                doc.id,
                remaining.len(),
                if remaining.len() == 1 { "" } else { "s" }
            );
            let _ = writeln!(text, "{}\n", tasks::checklist(doc));
            let current = tasks::steps::current_step(doc);
            match current {
                Some(step) => {
                    let _ = writeln!(text, "Continue from: ({}) {}\n", step.id, step.content);
                }
                None => {
                    let next = remaining[0];
                    let _ = writeln!(
                        text,
                        "Start the next pending step: ({}) {} — `ralph-hooks task step start {}`\n",
                        next.id, next.content, next.id
                    );
                }
            }
            let id = current.map_or(remaining[0].id.as_str(), |s| s.id.as_str());
            let _ = write!(
                text,
                "Rules:\n\
                 - Do the work of the current step, then mark it done: `ralph-hooks task step complete {id}`\n\
                 - Go straight on to the next step; do not stop until every step is done or skipped\n\
                 - If a step is blocked or no longer needed: `ralph-hooks task step skip <id> --note \"why\"`, then move on\n\
                 - If you cannot go on without the user's decision: `ralph-hooks task block --note \"what you need\"`, ask, and end your turn\n\
                 - Do not run `ralph-hooks task complete` until every step is done or skipped"
            );
        }
        Open::Todos(list) => {
            let remaining = list.open();
            let _ = writeln!(
                text,
                "[SELF-DRIVING {n}/{max}] Your todo list has {} open item{}:\n",
                remaining.len(),
                if remaining.len() == 1 { "" } else { "s" }
            );
            for item in &list.items {
                let marker = match item.status {
                    TodoStatus::Completed => "✅",
                    TodoStatus::InProgress => "▶",
                    TodoStatus::Pending => "□",
                };
                let _ = writeln!(text, "{marker} {}", item.content);
            }
            let current = remaining
                .iter()
                .find(|i| i.status == TodoStatus::InProgress)
                .unwrap_or(&remaining[0]);
            let _ = writeln!(text, "\nContinue from: {}\n", current.content);
            let tool = match list.source {
                TodoSource::TodoWrite => "TodoWrite",
                TodoSource::TaskTools => "TaskUpdate",
            };
            let _ = write!(
                text,
                "Rules:\n\
                 - Work through the open items and mark each one completed with {tool} as soon as it is done\n\
                 - Go straight on to the next item; do not stop while items are open\n\
                 - If an item no longer applies, remove it from the list (or mark it completed) and say why\n\
                 - If the list above is out of date because you already finished these items, update it with {tool} and stop"
            );
        }
    }
    text
}

fn stopped_message(open: &Open, verdict: Verdict, limits: Limits) -> String {
    let why = if verdict == Verdict::Stalled {
        format!(
            "{} continuations in a row changed nothing on the checklist (stalled)",
            limits.stall_after
        )
    } else {
        format!(
            "{} continuations in a row without finishing a step (the limit)",
            limits.max_consecutive
        )
    };
    match open {
        Open::Steps(doc) => {
            let ids: Vec<&str> = tasks::steps::open_steps(doc)
                .iter()
                .map(|s| s.id.as_str())
                .collect();
            format!(
                "ralph-hooks: stopped continuing task {}: {why}. Open steps: {}. Tell Claude how to go on, or update the steps with `ralph-hooks task step complete|skip <id>`.",
                doc.id,
                ids.join(", ")
            )
        }
        Open::Todos(list) => format!(
            "ralph-hooks: stopped continuing your todo list: {why}. {} item(s) still open. Tell Claude how to go on.",
            list.open().len()
        ),
    }
}

/// The session's counter, for `ralph-hooks status`.
pub fn counter(ctx: &Ctx) -> anyhow::Result<Option<Counter>> {
    let store = ctx.store();
    if !store.exists(STATE_FILE) {
        return Ok(None);
    }
    let Some(state) = store.read_json::<ContinuationState>(STATE_FILE)? else {
        return Ok(None);
    };
    let session = ctx.session_id.clone().unwrap_or_default();
    Ok(state.sessions.get(&session).cloned().or_else(|| {
        // Outside Claude Code there is no session: show the latest one.
        state
            .sessions
            .values()
            .max_by_key(|c| c.updated_at)
            .cloned()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_consecutive: 20,
        stall_after: 3,
    };

    fn at(minute: u32) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&format!("2026-11-21T12:{minute:02}:00Z"))
            .unwrap()
            .with_timezone(&Utc)
    }

    fn seen(fingerprint: &str, closed: usize) -> Observation {
        Observation {
            source: "steps",
            subject: "task_1".into(),
            fingerprint: fingerprint.into(),
            closed,
            open: 3,
        }
    }

    /// Runs stops in a row; each is (fingerprint, closed, stop_hook_active).
    fn run(limits: Limits, stops: &[(&str, usize, bool)]) -> Vec<Verdict> {
        let mut counter: Option<Counter> = None;
        let mut verdicts = Vec::new();
        for (minute, (fingerprint, closed, active)) in stops.iter().enumerate() {
            let (next, verdict) = decide(
                counter.as_ref(),
                &seen(fingerprint, *closed),
                *active,
                limits,
                at(minute as u32),
            );
            counter = Some(next);
            verdicts.push(verdict);
        }
        verdicts
    }

    #[test]
    fn stalls_after_three_continuations_without_change() {
        let verdicts = run(
            LIMITS,
            &[
                ("a", 0, false),
                ("a", 0, true),
                ("a", 0, true),
                ("a", 0, true),
                ("a", 0, true),
            ],
        );
        assert_eq!(
            verdicts,
            vec![
                Verdict::Continue(1),
                Verdict::Continue(2),
                Verdict::Continue(3),
                Verdict::Stalled,
                Verdict::AlreadyStopped
            ]
        );
    }

    #[test]
    fn finishing_a_step_resets_the_count() {
        let verdicts = run(
            LIMITS,
            &[
                ("a", 0, false),
                ("a", 0, true),
                ("b", 1, true),
                ("b", 1, true),
                ("c", 2, true),
            ],
        );
        assert_eq!(
            verdicts,
            vec![
                Verdict::Continue(1),
                Verdict::Continue(2),
                Verdict::Continue(1),
                Verdict::Continue(2),
                Verdict::Continue(1)
            ]
        );
    }

    #[test]
    fn ceiling_of_twenty_when_steps_only_shuffle() {
        // Every stop shows a different checklist (steps started back and
        // forth) but none finished: the stall rule never fires, the cap does.
        let fingerprints: Vec<String> = (0..22).map(|i| format!("f{i}")).collect();
        let mut stops: Vec<(&str, usize, bool)> = vec![(fingerprints[0].as_str(), 0, false)];
        stops.extend(fingerprints[1..].iter().map(|f| (f.as_str(), 0, true)));
        let verdicts = run(LIMITS, &stops);
        let expected: Vec<Verdict> = (1..=20).map(Verdict::Continue).collect();
        assert_eq!(verdicts[..20], expected[..]);
        assert_eq!(verdicts[20], Verdict::Capped);
        assert_eq!(verdicts[21], Verdict::AlreadyStopped);
    }

    #[test]
    fn ceiling_applies_with_stall_detection_off() {
        let limits = Limits {
            max_consecutive: 20,
            stall_after: 0,
        };
        let mut stops = vec![("a", 0, false)];
        stops.extend(std::iter::repeat_n(("a", 0, true), 20));
        let verdicts = run(limits, &stops);
        assert_eq!(verdicts[19], Verdict::Continue(20));
        assert_eq!(verdicts[20], Verdict::Capped);
    }

    #[test]
    fn a_fresh_user_turn_starts_over_even_after_a_stall() {
        let verdicts = run(
            LIMITS,
            &[
                ("a", 0, false),
                ("a", 0, true),
                ("a", 0, true),
                ("a", 0, true),
                ("a", 0, false),
            ],
        );
        assert_eq!(verdicts[3], Verdict::Stalled);
        assert_eq!(verdicts[4], Verdict::Continue(1));
    }

    #[test]
    fn a_change_after_a_stall_resumes() {
        let verdicts = run(
            LIMITS,
            &[
                ("a", 0, false),
                ("a", 0, true),
                ("a", 0, true),
                ("a", 0, true),
                ("b", 1, true),
            ],
        );
        assert_eq!(verdicts[3], Verdict::Stalled);
        assert_eq!(verdicts[4], Verdict::Continue(1));
    }

    #[test]
    fn another_subject_starts_a_new_count() {
        let (counter, _) = decide(None, &seen("a", 0), true, LIMITS, at(0));
        let mut other = seen("a", 0);
        other.subject = "task_2".into();
        let (_, verdict) = decide(Some(&counter), &other, true, LIMITS, at(1));
        assert_eq!(verdict, Verdict::Continue(1));
    }
}
