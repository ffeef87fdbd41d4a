//! Loop lifecycle on disk: start, pause, resume, cancel, archive. Used by
//! the CLI, the Stop hook and the UserPromptSubmit hook; every change is a
//! locked read-modify-write of `loop.json`.

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::hook::ctx::Ctx;
use crate::ralph::loop_ctl;
use crate::ralph::loop_state::{ARCHIVE_DIR, LOOP_FILE, LoopState, LoopStatus};
use crate::state::ids;

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
        paused_at: None,
        paused_by: None,
        worktree: crate::ralph::worktree::snapshot(&ctx.project_root, &ctx.state_root),
        touched_files: Default::default(),
        history: Vec::new(),
    };
    locked.save_json(&state)?;
    drop(locked);
    let mut data = json!({"event": "loop_started", "goal": state.goal, "maxIterations": state.max_iterations,
               "checks": state.checks, "promise": state.promise, "diagnostics": state.diagnostics});
    if state.project {
        data["project"] = json!(true);
        data["paths"] = json!(state.paths);
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
}

/// A user prompt reached the loop. `stop` says whether it was a stop phrase:
/// then a RUNNING loop of this session (or not yet claimed) becomes PAUSED.
/// Any prompt starts the loop's consecutive-block count again, because the
/// user has spoken and Claude Code's own count of Stop blocks starts over.
pub fn on_user_prompt(ctx: &Ctx, stop: bool) -> anyhow::Result<PromptEffect> {
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(PromptEffect::None);
    }
    // Read before locking: an ordinary prompt with nothing to reset must not
    // write, and most prompts are ordinary.
    let Some(seen) = store.read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(PromptEffect::None);
    };
    let mine = loop_ctl::ownership(&seen, ctx.session_id.as_deref()) != loop_ctl::Ownership::Other;
    if !seen.is_active() || !mine {
        return Ok(PromptEffect::None);
    }
    if !stop && seen.consecutive_blocks == 0 {
        return Ok(PromptEffect::None);
    }
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(PromptEffect::None);
    };
    if state.id != seen.id || !state.is_active() {
        return Ok(PromptEffect::None);
    }
    let now = ctx.now();
    state.consecutive_blocks = 0;
    let effect = if stop && state.is_running() {
        state.status = LoopStatus::Paused;
        state.paused_at = Some(now);
        PromptEffect::Paused(Box::new(state.clone()))
    } else if stop {
        PromptEffect::AlreadyPaused(Box::new(state.clone()))
    } else {
        PromptEffect::CounterReset
    };
    state.updated_at = now;
    locked.save_json(&state)?;
    drop(locked);
    if let PromptEffect::Paused(state) = &effect {
        let _ = ctx.log_event(
            "loop_event",
            ("loopId", &state.id),
            json!({"event": "loop_paused", "iteration": state.iteration, "by": "user_prompt"}),
        );
    }
    Ok(effect)
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
    state.status = LoopStatus::Running;
    state.paused_at = None;
    state.paused_by = None;
    state.consecutive_blocks = 0;
    state.updated_at = ctx.now();
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
