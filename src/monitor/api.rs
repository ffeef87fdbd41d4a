//! The routes. Reads answer JSON in the shapes [`super::data`]
//! builds; the one write,
//! `POST /api/tasks/update`, needs `Authorization: Bearer <token>` and goes
//! through [`crate::tasks::actions`], the CLI's locked update. While the
//! agent works unattended it is held to the agent's CLI policy
//! ([`crate::guards::control::task_write_refused`]): the agent can read the
//! token.
//!
//! Every request must name this server in `Host` (a DNS-rebinding page
//! names its own domain) and, when it has an `Origin`, come from this
//! server's own page: other sites may not read the live stream either.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::data::{self, Filter};
use super::live;
use super::{Agent, AppState};
use crate::guards::Supervision;
use crate::guards::control::{self, TaskWrite};
use crate::state::ids;
use crate::tasks::{self, actions::StepAction};

const PAGE: &str = include_str!("page.html");

type Shared = Arc<AppState>;

pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/agents", get(agents))
        .route("/api/agents/{agent}/tasks", get(all_tasks))
        .route("/api/agents/{agent}/tasks/{task}", get(one_task))
        .route("/api/agents/{agent}/current", get(current))
        .route("/api/agents/{agent}/blocked", get(blocked))
        .route("/api/agents/{agent}/history", get(history))
        .route("/api/agents/{agent}/plans", get(plans))
        .route("/api/agents/{agent}/loop", get(current_loop))
        .route("/api/agents/{agent}/loops", get(loops))
        .route(
            "/api/agents/{agent}/loops/{loop}/receipt",
            get(super::receipt::handler),
        )
        .route("/api/agents/{agent}/receipts/{loop}", get(receipt))
        .route("/api/team-state", get(team_state))
        .route("/api/events", get(events))
        .route("/api/tasks/update", post(update))
        .route("/api/stream", get(live::sse))
        .route("/ws", get(live::websocket))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such endpoint") })
        .layer(middleware::from_fn_with_state(state.clone(), guard_host))
        .with_state(state)
}

pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

fn ok(value: Value) -> Response {
    axum::Json(value).into_response()
}

/// The hosts this server answers to, with this port or none: `localhost`
/// and IP addresses. DNS rebinding needs a name the attacker controls, so an
/// IP literal is safe, and it is how another machine reaches a monitor
/// started with `--bind 0.0.0.0`; every other name is refused.
fn host_allowed(state: &AppState, host: &str) -> bool {
    let port = state.local.port().to_string();
    let name = match host.rsplit_once(':') {
        Some((name, p)) if p == port && !name.ends_with(':') => name,
        Some((_, p)) if p.chars().all(|c| c.is_ascii_digit()) && !host.ends_with(']') => {
            return false; // another port
        }
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// Whether a request's `Origin` is a page this monitor served: the very
/// host and port the request was sent to (the page's own origin), or this
/// monitor's loopback names and bound address. Never any other IP literal:
/// a page served from `http://203.0.113.5:3847/` is another site, and a
/// WebSocket is not covered by CORS.
fn origin_allowed(state: &AppState, origin: &str, host: &str) -> bool {
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    let port = state.local.port();
    let ours = [
        host.to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        state.local.to_string(),
    ];
    ours.iter()
        .any(|own| !own.is_empty() && own.eq_ignore_ascii_case(authority))
}

async fn guard_host(State(state): State<Shared>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !host_allowed(&state, host) {
        return error(
            StatusCode::FORBIDDEN,
            format!(
                "Host {host:?} is not this monitor (DNS rebinding protection): use http://localhost:{}/",
                state.local.port()
            ),
        );
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        let own = origin_allowed(&state, origin, host);
        if !own {
            return error(
                StatusCode::FORBIDDEN,
                format!(
                    "requests from {origin:?} are not allowed: only this monitor's own page may call it"
                ),
            );
        }
    }
    next.run(request).await
}

fn authorized(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    else {
        return false;
    };
    // Constant time in the token's length: no early exit on the first
    // differing byte.
    let (a, b) = (given.trim().as_bytes(), state.token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Where the page takes the data it paints first (see [`page_with`]).
const INITIAL_DATA: &str = "<script type=\"application/json\" id=\"initial-data\">null</script>";

/// The page with `data` in it, so its first paint shows the state on disk
/// now rather than an empty frame waiting for requests. The JSON text goes
/// inside a `<script>` element, where `</script>` or `<!--` in a task's
/// text would end it: every `<`, `>` and `&` is written as a JSON escape,
/// which `JSON.parse` reads back as the same character.
fn page_with(data: &Value) -> String {
    let mut json = String::new();
    for c in data.to_string().chars() {
        match c {
            '<' => json.push_str("\\u003c"),
            '>' => json.push_str("\\u003e"),
            '&' => json.push_str("\\u0026"),
            '\u{2028}' => json.push_str("\\u2028"),
            '\u{2029}' => json.push_str("\\u2029"),
            c => json.push(c),
        }
    }
    PAGE.replacen(
        INITIAL_DATA,
        &INITIAL_DATA.replacen(">null<", &format!(">{json}<"), 1),
        1,
    )
}

async fn page(State(state): State<Shared>) -> Response {
    let html = blocking(move || {
        let data = data::snapshot(&state.cache, &state.agents);
        Html(page_with(&data)).into_response()
    })
    .await;
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
            ),
        ],
        html,
    )
        .into_response()
}

/// Runs blocking file work off the async threads.
async fn blocking(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

fn unknown_agent(id: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("unknown agent {id:?}"))
}

async fn agents(State(state): State<Shared>) -> Response {
    blocking(move || ok(data::agents(&state.cache, &state.agents))).await
}

async fn list(state: Shared, agent: String, filter: Filter) -> Response {
    blocking(move || match state.agent(&agent) {
        Some(found) => (
            [(header::CONTENT_TYPE, "application/json")],
            data::task_list(&state.cache, found, filter),
        )
            .into_response(),
        None => unknown_agent(&agent),
    })
    .await
}

async fn all_tasks(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    list(state, agent, Filter::All).await
}

async fn blocked(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    list(state, agent, Filter::Blocked).await
}

async fn history(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    list(state, agent, Filter::History).await
}

async fn plans(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    list(state, agent, Filter::Plans).await
}

async fn one_task(
    State(state): State<Shared>,
    Path((agent, task)): Path<(String, String)>,
) -> Response {
    blocking(move || {
        let Some(found) = state.agent(&agent) else {
            return unknown_agent(&agent);
        };
        if let Err(problem) = ids::check("task", &task) {
            return error(StatusCode::BAD_REQUEST, format!("{problem:#}"));
        }
        match tasks::load(found.ctx().store(), &task) {
            Ok(Some(doc)) => ok(data::task_json(found, &doc)),
            Ok(None) => error(StatusCode::NOT_FOUND, format!("unknown task {task:?}")),
            Err(problem) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{problem:#}")),
        }
    })
    .await
}

async fn agent_value(
    state: Shared,
    agent: String,
    read: fn(&Agent) -> anyhow::Result<Value>,
) -> Response {
    blocking(move || match state.agent(&agent) {
        Some(found) => match read(found) {
            Ok(value) => ok(value),
            Err(problem) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{problem:#}")),
        },
        None => unknown_agent(&agent),
    })
    .await
}

async fn current(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    agent_value(state, agent, data::current).await
}

async fn current_loop(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    agent_value(state, agent, data::current_loop).await
}

async fn loops(State(state): State<Shared>, Path(agent): Path<String>) -> Response {
    agent_value(state, agent, data::archived_loops).await
}

/// A finished loop's completion receipt, as written (an in-toto statement).
async fn receipt(
    State(state): State<Shared>,
    Path((agent, id)): Path<(String, String)>,
) -> Response {
    blocking(move || {
        let Some(found) = state.agent(&agent) else {
            return unknown_agent(&agent);
        };
        if let Err(problem) = ids::check("loop", &id) {
            return error(StatusCode::BAD_REQUEST, format!("{problem:#}"));
        }
        match data::receipt(found, &id) {
            Ok(Some(value)) => ok(value),
            Ok(None) => error(StatusCode::NOT_FOUND, format!("no receipt for loop {id:?}")),
            Err(problem) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{problem:#}")),
        }
    })
    .await
}

async fn team_state(State(state): State<Shared>) -> Response {
    blocking(move || ok(data::team_state(&state.cache, &state.agents))).await
}

#[derive(Deserialize)]
struct EventsQuery {
    since: Option<String>,
    limit: Option<String>,
}

async fn events(State(state): State<Shared>, Query(query): Query<EventsQuery>) -> Response {
    let limit = match query.limit.as_deref().map(str::parse::<usize>) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "limit must be a number"),
    };
    blocking(move || ok(data::events(&state.agents, query.since.as_deref(), limit))).await
}

/// The body of `POST /api/tasks/update` (seed 002 §16.6).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    task_id: Option<String>,
    agent_id: Option<String>,
    progress: Option<String>,
    action: Option<String>,
    step_id: Option<String>,
    step_content: Option<String>,
    steps: Option<Vec<String>>,
    note: Option<String>,
}

async fn update(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&state, &headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "writes need Authorization: Bearer <token> (printed by `ralph-hooks monitor`, in monitor.json)",
        );
    }
    let body: UpdateBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(problem) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("malformed JSON: {problem}"),
            );
        }
    };
    let (Some(task_id), Some(agent_id)) = (body.task_id.clone(), body.agent_id.clone()) else {
        return error(StatusCode::BAD_REQUEST, "taskId and agentId required");
    };
    blocking(move || apply_update(&state, &agent_id, &task_id, body)).await
}

/// The agent can read the token from `monitor.json`, so while it works
/// unattended this API grants no more than the agent's own CLI: the same
/// policy ([`control::task_write_refused`]), judged on the state on disk
/// now. A supervision that cannot be read refuses the write (the monitor is
/// not the user's only way; failing closed here blocks no session).
fn refused_while_unattended(agent: &Agent, task_id: &str, action: &StepAction) -> Option<Response> {
    let write = match action {
        StepAction::Set(_) => TaskWrite::SetSteps,
        _ => return None,
    };
    let mut ctx = agent.ctx();
    // The active task's own session: a stop phrase of that session pauses
    // its continuation, and then the work is attended again.
    ctx.session_id = tasks::active(ctx.store())
        .ok()
        .flatten()
        .and_then(|doc| doc.field("Session").map(str::to_string));
    let supervision = match Supervision::read(&ctx) {
        Ok(supervision) => supervision,
        Err(problem) => {
            return Some(error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "cannot tell whether the work runs unattended, so the steps are left as they are: {problem:#}"
                ),
            ));
        }
    };
    // Only the active task is under the policy, as for the CLI.
    if supervision.task.as_ref().map(|doc| doc.id.as_str()) != Some(task_id) {
        return None;
    }
    let reason = control::task_write_refused(&supervision, write)?;
    Some(error(
        StatusCode::FORBIDDEN,
        format!(
            "refused while the work runs unattended (the monitor's writes follow the agent's rules then): {reason}"
        ),
    ))
}

fn apply_update(state: &AppState, agent_id: &str, task_id: &str, body: UpdateBody) -> Response {
    if let Err(problem) = ids::check("task", task_id) {
        return error(StatusCode::BAD_REQUEST, format!("{problem:#}"));
    }
    let Some(agent) = state.agent(agent_id) else {
        return unknown_agent(agent_id);
    };
    let ctx = agent.ctx();
    match tasks::load(ctx.store(), task_id) {
        Ok(Some(_)) => {}
        Ok(None) => return error(StatusCode::NOT_FOUND, format!("unknown task {task_id:?}")),
        Err(problem) => return error(StatusCode::INTERNAL_SERVER_ERROR, format!("{problem:#}")),
    }
    let step_id = || {
        body.step_id
            .clone()
            .ok_or_else(|| "stepId required for this action".to_string())
    };
    let note = || body.note.clone();
    let takes_note = matches!(
        body.action.as_deref(),
        Some("complete_step" | "start_step" | "skip_step")
    );
    if body.note.is_some() && !takes_note {
        return error(
            StatusCode::BAD_REQUEST,
            "note goes with complete_step, start_step or skip_step; log other notes as progress",
        );
    }
    let action = match body.action.as_deref() {
        None => Ok(None),
        Some("add_step") => body
            .step_content
            .clone()
            .map(StepAction::Add)
            .ok_or_else(|| "stepContent required for add_step".to_string())
            .map(Some),
        Some("complete_step") => {
            step_id().map(|id| Some(StepAction::Complete { id, note: note() }))
        }
        Some("start_step") => step_id().map(|id| Some(StepAction::Start { id, note: note() })),
        Some("skip_step") => step_id().map(|id| Some(StepAction::Skip { id, note: note() })),
        Some("set_steps") => body
            .steps
            .clone()
            .map(StepAction::Set)
            .ok_or_else(|| "steps required for set_steps".to_string())
            .map(Some),
        Some("reorder_steps") => body
            .steps
            .clone()
            .map(StepAction::Reorder)
            .ok_or_else(|| {
                "steps (the ids in their new order) required for reorder_steps".to_string()
            })
            .map(Some),
        Some(other) => Err(format!(
            "unknown action {other:?}: use add_step, complete_step, start_step, skip_step, set_steps or reorder_steps"
        )),
    };
    let action = match action {
        Ok(action) => action,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    if let Some(action) = &action
        && let Some(refused) = refused_while_unattended(agent, task_id, action)
    {
        return refused;
    }
    let result = match (action, body.progress.as_deref()) {
        (Some(action), _) => {
            if let Some(step) = body.step_id.as_deref()
                && let Err(problem) = ids::check("step", step)
            {
                return error(StatusCode::BAD_REQUEST, format!("{problem:#}"));
            }
            tasks::actions::apply(&ctx, task_id, &action).map(|a| a.doc)
        }
        (None, Some(text)) if !text.trim().is_empty() => {
            tasks::actions::add_progress(&ctx, task_id, text)
        }
        _ => return error(StatusCode::BAD_REQUEST, "progress or action required"),
    };
    // Our own write: the next read must see it, whatever the watcher heard.
    state.cache.invalidate();
    match result {
        Ok(doc) => ok(data::task_json(agent, &doc)),
        // The step functions refuse with a message that says why (unknown
        // step, a reorder that is not a permutation): the caller's mistake.
        Err(problem) => error(StatusCode::BAD_REQUEST, format!("{problem:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initial_data_cannot_end_its_script_element() {
        let data = json!({"message": "</script><script>alert(1)</script><!-- & \u{2028}"});
        let page = page_with(&data);
        let start = page.find("id=\"initial-data\">").unwrap() + "id=\"initial-data\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        let embedded = &page[start..end];
        assert!(
            !embedded.contains('<') && !embedded.contains('>'),
            "{embedded}"
        );
        let back: Value = serde_json::from_str(embedded).unwrap();
        assert_eq!(back, data, "JSON.parse reads the same text back");
        assert_eq!(page.matches("id=\"initial-data\"").count(), 1);
    }
}
