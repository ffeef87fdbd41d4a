//! Loop lifecycle on disk: start, pause, resume, cancel, archive, and what
//! happens to a loop between Stops — a capped turn, an API failure, a
//! prompt. Used by the CLI, the Stop hook and the UserPromptSubmit and
//! SessionStart hooks; every change is a locked read-modify-write of
//! `loop.json`.

use std::path::Path;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::hook::ctx::Ctx;
use crate::hook::transcript::{self, CapRow};
use crate::ralph::budget::{self, Budget};
use crate::ralph::loop_ctl;
use crate::ralph::loop_state::{ARCHIVE_DIR, ApiFailure, LOOP_FILE, LoopState, LoopStatus};
use crate::ralph::notify::{self, Channel};
use crate::state::ids;

/// The `loop` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct LoopConfig {
    /// Every `loop start` uses `--rewake`.
    #[serde(default)]
    pub rewake: bool,
    /// After a usage limit paused the loop, the StopFailure hook waits for
    /// the reset and wakes the session (interactive and stream-json
    /// sessions; plain `claude -p` has ended by then).
    #[serde(default)]
    pub auto_resume: bool,
    /// Seconds past the reset time before waking (default 60).
    #[serde(default)]
    pub auto_resume_margin_secs: Option<u64>,
    /// `--stop-when-stuck`'s number of iterations (default 3).
    #[serde(default)]
    pub stuck_after: Option<u32>,
    /// The loop's checks keep the network (they run with loopback only:
    /// no push, no registry). The user's choice, in a file the agent
    /// cannot change in sandbox mode.
    #[serde(default)]
    pub check_network: bool,
    /// Places outside the project the checks may write (a cache: `~/.cargo`,
    /// `~/.npm`); `~/` is the home folder.
    #[serde(default)]
    pub check_writable: Vec<String>,
}

impl LoopConfig {
    /// The section; a broken one is reported and replaced by the defaults.
    pub fn load(ctx: &Ctx) -> LoopConfig {
        ctx.config().section("loop").unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: ignoring the `loop` config section: {error:#}");
            LoopConfig::default()
        })
    }

    /// The walls a loop's checks run in: the confinement in sandbox mode.
    /// Plain mode runs the check as is (its process group is ours to signal
    /// and kill); the loop's state is compared after it and put back if the
    /// check changed it.
    pub fn check_walls(&self, ctx: &Ctx) -> crate::ralph::checks::Walls {
        if !crate::hook::sandbox::installed(ctx) {
            return crate::ralph::checks::Walls::OwnPids;
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let writable = self
            .check_writable
            .iter()
            .filter_map(|place| match (place.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => Some(home.join(rest)),
                (Some(_), None) => None,
                (None, _) => Some(ctx.project_root.join(place)),
            })
            .collect();
        let confinement = crate::util::confine::Confinement {
            project: ctx.project_root.clone(),
            read_only: crate::hook::sandbox::supervision_paths(&ctx.project_root, &ctx.state_root),
            writable,
            network: self.check_network,
            env: Vec::new(),
        };
        crate::ralph::checks::Walls::Required(confinement)
    }

    pub fn auto_resume_margin_secs(&self) -> u64 {
        self.auto_resume_margin_secs.unwrap_or(60)
    }
}

/// What `ralph-hooks loop start` asks for.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    pub goal: String,
    pub promise: Option<String>,
    pub checks: Vec<String>,
    pub check_timeout_secs: u64,
    pub max_iterations: u32,
    pub diagnostics: bool,
    pub no_warnings: bool,
    /// No errors in the project (or under `paths`): a goal-only loop.
    pub project: bool,
    pub paths: Vec<String>,
    /// Tokens, time, estimated cost, `--stop-when-stuck`.
    pub budget: Budget,
    /// Wake the session after each turn instead of blocking its end.
    pub rewake: bool,
    /// Project ast-grep rule files that do not load (said at the start and
    /// logged with it).
    pub rule_problems: Vec<String>,
}

/// Starts a loop, refusing while another one is running.
pub fn start(ctx: &Ctx, request: StartRequest) -> anyhow::Result<LoopState> {
    if request.goal.trim().is_empty() {
        bail!(
            "the goal is empty: say what the loop should achieve, e.g. `ralph-hooks loop start \"make the tests pass\" --check \"cargo test\"`"
        );
    }
    if request.promise.is_none()
        && request.checks.is_empty()
        && !request.diagnostics
        && !request.project
    {
        bail!(
            "a loop needs at least one completion condition: --promise TEXT, --check CMD or --diagnostics; without one it could never finish"
        );
    }
    if request.max_iterations == 0 {
        bail!("--max-iterations must be at least 1");
    }
    if request.budget.max_tokens == Some(0)
        || request.budget.max_secs == Some(0)
        || request
            .budget
            .max_cost_usd
            .is_some_and(|cost| cost.is_nan() || cost <= 0.0)
    {
        bail!(
            "a budget of zero would end the loop at its first stop: give --max-tokens, --max-time or --max-cost above zero"
        );
    }
    if let Some(promise) = &request.promise
        && (promise.trim().is_empty()
            || promise.contains("<promise>")
            || promise.contains("</promise>"))
    {
        bail!("--promise must be plain, non-empty text (the tags are added for you)");
    }
    let store = ctx.store();
    let locked = store.lock(LOOP_FILE)?;
    if let Some(existing) = locked.load_json::<LoopState>()?
        && existing.is_active()
    {
        bail!(
            "loop {} is already {} (goal: {:?}, iteration {}/{}, session {}): finish it, or run `ralph-hooks loop cancel` first",
            existing.id,
            existing.status.as_str(),
            existing.goal,
            existing.iteration,
            existing.max_iterations,
            existing.session_id.as_deref().unwrap_or("not yet claimed")
        );
    }
    let now = ctx.now();
    let id = format!(
        "loop-{}-{:04x}",
        now.format("%Y%m%dT%H%M%SZ"),
        std::process::id() & 0xffff
    );
    ids::check("loop", &id)?;
    let state = LoopState {
        version: 1,
        id,
        status: LoopStatus::Running,
        goal: request.goal,
        promise: request
            .promise
            .map(|p| crate::ralph::promise::normalize_whitespace(&p)),
        checks: request.checks,
        check_timeout_secs: request.check_timeout_secs,
        diagnostics: request.diagnostics,
        no_warnings: request.no_warnings,
        project: request.project,
        paths: request.paths,
        start_record: None,
        iteration: 0,
        max_iterations: request.max_iterations,
        session_id: ctx.session_id.clone(),
        project_root: ctx.project_root.to_string_lossy().into_owned(),
        started_at: now,
        updated_at: now,
        ended_at: None,
        completion_reason: None,
        consecutive_blocks: 0,
        held_stops: 0,
        held_since: None,
        paused_at: None,
        paused_by: None,
        worktree: crate::ralph::worktree::snapshot(&ctx.project_root, &ctx.state_root),
        touched_files: Default::default(),
        history: Vec::new(),
        completion_detail: None,
        rewake: request.rewake,
        budget: request.budget,
        spend: Default::default(),
        usage_cursor: None,
        budget_warned: Default::default(),
        paused_secs: 0,
        resumed_at: None,
        capped: 0,
        capped_at: None,
        resets_at: None,
        limit_message: None,
        api_failures: Vec::new(),
        notices: Vec::new(),
    };
    locked.save_json(&state)?;
    drop(locked);
    let mut data = json!({"event": "loop_started", "goal": state.goal, "maxIterations": state.max_iterations,
               "checks": state.checks, "promise": state.promise, "diagnostics": state.diagnostics});
    if state.project {
        data["project"] = json!(true);
        data["paths"] = json!(state.paths);
    }
    if !state.budget.is_empty() {
        data["budget"] = json!(state.budget);
    }
    if state.rewake {
        data["rewake"] = json!(true);
    }
    if !request.rule_problems.is_empty() {
        data["ruleProblems"] = json!(request.rule_problems);
    }
    let _ = ctx.log_event("loop_event", ("loopId", &state.id), data);
    Ok(state)
}

/// Keeps the project check made at `loop start` in the loop it was made
/// for (still running, same id); a loop replaced meanwhile is left alone.
pub fn record_start(ctx: &Ctx, id: &str, record: Value) -> anyhow::Result<()> {
    let locked = ctx.store().lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(());
    };
    if state.id != id || !state.is_running() {
        return Ok(());
    }
    state.start_record = Some(record);
    locked.save_json(&state)
}

/// What `loop pause` found.
#[derive(Debug)]
pub enum Paused {
    /// The running loop is PAUSED now.
    Now(Box<LoopState>),
    /// Already paused (by the user, the guard or a usage limit): unchanged.
    Already(Box<LoopState>),
    /// No running or paused loop.
    Nothing,
}

/// The user pauses the running loop from a terminal, as a "stop" prompt
/// does: Stops let the session end, nothing is spent, and `loop resume`
/// (or a prompt that asks to go on) runs it again.
pub fn pause(ctx: &Ctx) -> anyhow::Result<Paused> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(Paused::Nothing);
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(Paused::Nothing);
    };
    if !state.is_active() {
        return Ok(Paused::Nothing);
    }
    if !state.is_running() {
        return Ok(Paused::Already(Box::new(state)));
    }
    let now = ctx.now();
    state.status = LoopStatus::Paused;
    state.paused_at = Some(now);
    state.paused_by = None;
    state.consecutive_blocks = 0;
    state.updated_at = now;
    locked.save_json(&state)?;
    drop(locked);
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_paused", "iteration": state.iteration, "by": "cli"}),
    );
    Ok(Paused::Now(Box::new(state)))
}

/// Cancels the running or paused loop; `None` when there is none.
pub fn cancel(ctx: &Ctx) -> anyhow::Result<Option<LoopState>> {
    let store = ctx.store();
    // Nothing to cancel must leave nothing behind, not even a lock file.
    if !store.exists(LOOP_FILE) {
        return Ok(None);
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(None);
    };
    if !state.is_active() {
        return Ok(None);
    }
    state.paused_at = None;
    state.paused_by = None;
    loop_ctl::finish(&mut state, LoopStatus::Cancelled, "cancelled", ctx.now());
    locked.save_json(&state)?;
    drop(locked);
    archive(ctx, &state)?;
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_cancelled", "iteration": state.iteration,
               "startedAt": state.started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
    );
    Ok(Some(state))
}

/// What a user's prompt did to the loop.
#[derive(Debug, Clone)]
pub enum PromptEffect {
    /// No loop file, a finished loop, or another session's loop.
    None,
    /// The stop phrase paused this RUNNING loop.
    Paused(Box<LoopState>),
    /// The loop was already paused; nothing changed.
    AlreadyPaused(Box<LoopState>),
    /// An ordinary prompt: the consecutive-block count starts again.
    CounterReset,
    /// The loop was paused by a usage limit; the user's prompt runs it again.
    ResumedAfterLimit(Box<LoopState>),
}

/// A user prompt's effect on the loop, and what the user must be told.
#[derive(Debug, Clone)]
pub struct PromptOutcome {
    pub effect: PromptEffect,
    /// Claude Code's block cap ended the previous turn (seen now).
    pub capped: Option<String>,
    /// Notices that waited for the user.
    pub notices: Vec<String>,
}

/// A user prompt reached the loop (the caller made sure a person wrote it:
/// a woken turn's task notification or a system prompt never gets here).
/// `stop` says whether it was a stop phrase: then a RUNNING loop of this
/// session (or not yet claimed) becomes PAUSED. Any prompt starts the
/// loop's consecutive-block count again, because the user has spoken and
/// Claude Code's own count of Stop blocks starts over; before that, a turn
/// the block cap ended (its row in `transcript`) is recorded. A loop the
/// usage limit paused runs again. Notices waiting for the user are taken.
/// Claims a running loop no session owns yet for this hook's session (the
/// first prompt of a real Claude Code session). Reads before locking: an
/// owned loop, or none, writes nothing.
pub fn claim(ctx: &Ctx) -> anyhow::Result<()> {
    let Some(session) = ctx.session_id.clone() else {
        return Ok(());
    };
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(());
    }
    let Some(seen) = store.read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(());
    };
    if seen.session_id.is_some() || !seen.is_active() {
        return Ok(());
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(());
    };
    if state.id != seen.id || state.session_id.is_some() {
        return Ok(());
    }
    state.session_id = Some(session);
    locked.save_json(&state)?;
    ctx.debug(format_args!(
        "loop {} claimed by session {:?} at its first prompt",
        state.id, state.session_id
    ));
    Ok(())
}

pub fn on_user_prompt(
    ctx: &Ctx,
    stop: bool,
    transcript: Option<&Path>,
) -> anyhow::Result<PromptOutcome> {
    let mut outcome = PromptOutcome {
        effect: PromptEffect::None,
        capped: None,
        notices: Vec::new(),
    };
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(outcome);
    }
    // Read before locking: an ordinary prompt with nothing to reset must not
    // write, and most prompts are ordinary.
    let Some(seen) = store.read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(outcome);
    };
    let mine = loop_ctl::ownership(&seen, ctx.session_id.as_deref()) != loop_ctl::Ownership::Other;
    if !mine {
        return Ok(outcome);
    }
    let acts =
        seen.is_active() && (stop || seen.consecutive_blocks > 0 || seen.paused_by_usage_limit());
    if !acts && seen.notices.is_empty() {
        return Ok(outcome);
    }
    // The transcript is read before the lock: it may be large.
    let cap_row = match transcript {
        Some(path) if seen.is_running() && seen.consecutive_blocks > 0 => {
            transcript::cap_row_after(path, cap_search_start(&seen))
        }
        _ => None,
    };
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(outcome);
    };
    if state.id != seen.id {
        return Ok(outcome);
    }
    let now = ctx.now();
    outcome.notices = std::mem::take(&mut state.notices);
    if state.is_active() {
        if let Some(row) = &cap_row
            && state.is_running()
        {
            outcome.capped = Some(record_cap(ctx, &mut state, row));
        }
        state.consecutive_blocks = 0;
        outcome.effect = if stop && state.is_running() {
            state.status = LoopStatus::Paused;
            state.paused_at = Some(now);
            PromptEffect::Paused(Box::new(state.clone()))
        } else if stop {
            // The user's own stop outranks a usage-limit pause: only they
            // lift it now.
            state.paused_by = None;
            PromptEffect::AlreadyPaused(Box::new(state.clone()))
        } else if state.paused_by_usage_limit() {
            resume_in_place(&mut state, now);
            PromptEffect::ResumedAfterLimit(Box::new(state.clone()))
        } else {
            PromptEffect::CounterReset
        };
    }
    state.updated_at = now;
    locked.save_json(&state)?;
    drop(locked);
    match &outcome.effect {
        PromptEffect::Paused(state) => {
            let _ = ctx.log_event(
                "loop_event",
                ("loopId", &state.id),
                json!({"event": "loop_paused", "iteration": state.iteration, "by": "user_prompt"}),
            );
        }
        PromptEffect::ResumedAfterLimit(state) => {
            let _ = ctx.log_event(
                "loop_event",
                ("loopId", &state.id),
                json!({"event": "loop_resumed", "iteration": state.iteration, "by": "user_prompt", "after": "usage_limit"}),
            );
        }
        _ => {}
    }
    Ok(outcome)
}

/// Where to look for a new cap row: after the last one recorded, and after
/// the loop started.
pub fn cap_search_start(state: &LoopState) -> DateTime<Utc> {
    state
        .capped_at
        .map_or(state.started_at, |at| at.max(state.started_at))
}

/// Records a turn Claude Code's block cap ended: the `capped` count and
/// time, the overridden block's history entry, a `loop_capped` event.
/// Returns what to tell the user.
pub fn record_cap(ctx: &Ctx, state: &mut LoopState, row: &CapRow) -> String {
    state.capped += 1;
    state.capped_at = Some(row.at);
    if let Some(entry) = state
        .history
        .iter_mut()
        .rev()
        .find(|entry| entry.at <= row.at && entry.decision == "block")
    {
        entry.capped_at = Some(row.at);
    }
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_capped", "iteration": state.iteration, "capped": state.capped,
               "at": row.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
               "consecutiveBlocks": state.consecutive_blocks}),
    );
    // The client's own words, up to its dash: "A hook blocked the turn
    // from ending 9 consecutive times".
    let said = row
        .text
        .split(['—', '.'])
        .next()
        .unwrap_or(&row.text)
        .trim();
    format!(
        "ralph-hooks: the last turn ended because Claude Code's block cap stopped it (\"{said}\"), not because the loop finished. Loop {} is still RUNNING at iteration {}/{} and carries on with the next turn.",
        state.id, state.iteration, state.max_iterations
    )
}

/// A session started (a resume, a compaction, a new start): a turn the
/// block cap ended is recorded, and the notices waiting for the user are
/// taken. Returns what to tell the user, nothing when there is nothing.
pub fn on_session_start(ctx: &Ctx, transcript: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(Vec::new());
    }
    let Some(seen) = store.read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(Vec::new());
    };
    if loop_ctl::ownership(&seen, ctx.session_id.as_deref()) == loop_ctl::Ownership::Other {
        return Ok(Vec::new());
    }
    let cap_row = match transcript {
        Some(path) if seen.is_running() && seen.consecutive_blocks > 0 => {
            transcript::cap_row_after(path, cap_search_start(&seen))
        }
        _ => None,
    };
    if cap_row.is_none() && seen.notices.is_empty() {
        return Ok(Vec::new());
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(Vec::new());
    };
    if state.id != seen.id {
        return Ok(Vec::new());
    }
    let mut told = std::mem::take(&mut state.notices);
    let mut capped = None;
    if let Some(row) = &cap_row
        && state.is_running()
    {
        let message = record_cap(ctx, &mut state, row);
        told.push(message.clone());
        capped = Some(message);
        // The turn ended: Claude Code's count of blocks starts over.
        state.consecutive_blocks = 0;
    }
    state.updated_at = ctx.now();
    locked.save_json(&state)?;
    drop(locked);
    if let Some(message) = capped {
        // The session is starting: the user is there, so the webhook keeps
        // the record and no desktop notification interrupts them.
        notify::notify(
            ctx,
            notify::Event::Capped,
            &state,
            &message,
            Channel::WebhookOnly,
        );
    }
    Ok(told)
}

/// An API error ended a turn (StopFailure, or a Stop whose last message is
/// a limit notice).
#[derive(Debug, Clone, Default)]
pub struct TurnFailure {
    /// `rate_limit`, `server_error`, `overloaded`, …
    pub error: String,
    pub message: String,
    pub resets_at: Option<DateTime<Utc>>,
}

impl TurnFailure {
    /// A rate or usage limit: the loop pauses until the user's next prompt.
    pub fn is_limit(&self) -> bool {
        self.error == "rate_limit"
    }
}

/// What a failed turn did to the loop.
#[derive(Debug, Clone)]
pub enum FailureEffect {
    /// No loop of this session is running: nothing recorded.
    None,
    /// A limit: the loop is PAUSED (`paused_by: "usage_limit"`).
    Paused(Box<LoopState>),
    /// Another failure: recorded; the loop stays as it was.
    Recorded(Box<LoopState>),
}

/// Records a failed turn in the running loop of this session: no iteration
/// is spent either way. A limit pauses the loop (`usage_limit`, with the
/// reset time when known) until the user's next prompt or `loop resume`;
/// another failure is kept in `api_failures`. The user is told at the next
/// prompt or session start (a notice): nothing a failed turn's hook prints
/// reaches them.
pub fn on_turn_failure(ctx: &Ctx, failure: &TurnFailure) -> anyhow::Result<FailureEffect> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(FailureEffect::None);
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(FailureEffect::None);
    };
    if !state.is_running()
        || loop_ctl::ownership(&state, ctx.session_id.as_deref()) == loop_ctl::Ownership::Other
    {
        return Ok(FailureEffect::None);
    }
    let now = ctx.now();
    if state.session_id.is_none() {
        state.session_id = ctx.session_id.clone();
    }
    state.push_api_failure(ApiFailure {
        at: now,
        error: failure.error.clone(),
        message: failure.message.clone(),
        resets_at: failure.resets_at,
    });
    state.updated_at = now;
    let resets = failure
        .resets_at
        .map(|at| format!(" It resets at {}.", at.format("%Y-%m-%d %H:%M UTC")))
        .unwrap_or_default();
    let effect = if failure.is_limit() {
        state.status = LoopStatus::Paused;
        state.paused_at = Some(now);
        state.paused_by = Some("usage_limit".into());
        state.resets_at = failure.resets_at;
        state.limit_message = Some(failure.message.clone());
        state.push_notice(format!(
            "ralph-hooks: loop {} was paused at {} by a usage limit (\"{}\"), with no iteration spent (still {}/{}).{resets} Your next message resumes it (or `ralph-hooks loop resume`).",
            state.id,
            now.format("%H:%M UTC"),
            failure.message,
            state.iteration,
            state.max_iterations
        ));
        FailureEffect::Paused(Box::new(state.clone()))
    } else {
        state.push_notice(format!(
            "ralph-hooks: a turn of loop {} ended at {} on an API error ({}: \"{}\"), with no iteration spent. The loop is still RUNNING: send a message (\"continue\") to go on.",
            state.id,
            now.format("%H:%M UTC"),
            failure.error,
            failure.message
        ));
        FailureEffect::Recorded(Box::new(state.clone()))
    };
    locked.save_json(&state)?;
    drop(locked);
    let mut data =
        json!({"iteration": state.iteration, "error": failure.error, "message": failure.message});
    if let Some(at) = failure.resets_at {
        data["resetsAt"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    if failure.is_limit() {
        data["event"] = json!("loop_paused");
        data["by"] = json!("usage_limit");
    } else {
        data["event"] = json!("loop_api_failure");
    }
    let _ = ctx.log_event("loop_event", ("loopId", &state.id), data);
    Ok(effect)
}

/// Queues a notice for the user's next prompt or session start.
pub fn add_notice(ctx: &Ctx, id: &str, text: String) -> anyhow::Result<()> {
    let locked = ctx.store().lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(());
    };
    if state.id != id {
        return Ok(());
    }
    state.push_notice(text);
    locked.save_json(&state)
}

/// Resumes a loop the usage limit paused, when it still is: the same pause
/// (`paused_at`) of the same loop. Used by the auto-resume after the limit
/// resets; `None` when the user resumed, cancelled or replaced it meanwhile.
pub fn resume_after_limit(
    ctx: &Ctx,
    id: &str,
    paused_at: DateTime<Utc>,
) -> anyhow::Result<Option<LoopState>> {
    let locked = ctx.store().lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(None);
    };
    if state.id != id || !state.paused_by_usage_limit() || state.paused_at != Some(paused_at) {
        return Ok(None);
    }
    let now = chrono::Utc::now();
    resume_in_place(&mut state, now);
    locked.save_json(&state)?;
    drop(locked);
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_resumed", "iteration": state.iteration, "by": "auto_resume", "after": "usage_limit"}),
    );
    Ok(Some(state))
}

/// RUNNING again: the pause's time is left out of the time budget, and the
/// next iteration's time starts now.
fn resume_in_place(state: &mut LoopState, now: DateTime<Utc>) {
    if let Some(since) = state.paused_at {
        state.paused_secs += (now - since).num_seconds().max(0) as u64;
    }
    state.status = LoopStatus::Running;
    state.paused_at = None;
    state.paused_by = None;
    state.resets_at = None;
    state.limit_message = None;
    state.consecutive_blocks = 0;
    state.resumed_at = Some(now);
    state.updated_at = now;
}

/// The spend line for a loop, for messages: `41,230 tokens, ~$0.84
/// (estimate), 12m 05s`.
pub fn spend_summary(state: &LoopState, now: DateTime<Utc>) -> String {
    budget::summary(&state.spend, state.active_secs(now))
}

/// Pauses the RUNNING loop because the guard saw the agent publish (a push,
/// a package) while it ran unattended: `paused_by: "guard"`, a
/// `loop_paused` event with what was seen. `None` when no loop runs.
pub fn pause_by_guard(ctx: &Ctx, what: &str) -> anyhow::Result<Option<LoopState>> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(None);
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(None);
    };
    if !state.is_running() {
        return Ok(None);
    }
    let now = ctx.now();
    state.status = LoopStatus::Paused;
    state.paused_at = Some(now);
    state.paused_by = Some("guard".into());
    state.updated_at = now;
    locked.save_json(&state)?;
    drop(locked);
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_paused", "iteration": state.iteration, "by": "guard", "reason": what}),
    );
    Ok(Some(state))
}

/// Makes a PAUSED loop RUNNING again, its iteration count kept.
pub enum Resumed {
    Resumed(Box<LoopState>),
    AlreadyRunning(Box<LoopState>),
    /// No loop, or a finished one (its status given).
    NotPaused(Option<Box<LoopState>>),
}

pub fn resume(ctx: &Ctx) -> anyhow::Result<Resumed> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(Resumed::NotPaused(None));
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(Resumed::NotPaused(None));
    };
    match state.status {
        LoopStatus::Paused => {}
        LoopStatus::Running => return Ok(Resumed::AlreadyRunning(Box::new(state))),
        _ => return Ok(Resumed::NotPaused(Some(Box::new(state)))),
    }
    resume_in_place(&mut state, ctx.now());
    locked.save_json(&state)?;
    drop(locked);
    let _ = ctx.log_event(
        "loop_event",
        ("loopId", &state.id),
        json!({"event": "loop_resumed", "iteration": state.iteration}),
    );
    Ok(Resumed::Resumed(Box::new(state)))
}

/// Copies a finished loop to `loops/<id>.json`; `loop.json` keeps it as "the last loop".
pub fn archive(ctx: &Ctx, state: &LoopState) -> anyhow::Result<()> {
    ids::check("loop", &state.id).context("refusing to archive a loop with an unsafe id")?;
    let relative = format!("{ARCHIVE_DIR}/{}.json", state.id);
    ctx.store().lock(&relative)?.save_json(state)
}
