//! `GET /api/agents/{agent}/loops/{loop}/receipt`: the file a loop's
//! `receipt` field names, for the Loop view's link. The path comes from a
//! state file, so it is served only when it resolves (links followed)
//! inside the project or its state root, only a regular file, and always
//! as plain text in a sandbox: a receipt that holds HTML or script is
//! shown, never run with this page's origin (which holds the write token).

use std::path::{Path, PathBuf};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::Agent;
use crate::state::ids;
use crate::util::fsread;

/// The largest receipt served.
const MAX_RECEIPT: u64 = 8 * 1024 * 1024;

/// Where `receipt` points, if that is inside one of `roots` (both sides
/// canonical: no `..` or link leads out). `None` when it does not exist.
pub fn resolve(
    receipt: &str,
    project_root: &Path,
    roots: &[PathBuf],
) -> Result<Option<PathBuf>, String> {
    if receipt.is_empty() || receipt.contains('\0') {
        return Err("the loop's receipt is not a path".into());
    }
    let path = project_root.join(receipt);
    let real = match path.canonicalize() {
        Ok(real) => real,
        Err(problem) if problem.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(problem) => return Err(format!("cannot read {}: {problem}", path.display())),
    };
    let inside = roots
        .iter()
        .filter_map(|root| root.canonicalize().ok())
        .any(|root| real.starts_with(root));
    if inside {
        Ok(Some(real))
    } else {
        Err(format!(
            "the receipt {} is outside the project and its state: not served",
            path.display()
        ))
    }
}

/// The loop `loop_id` of `agent`: the current one, else the archived one.
fn find_loop(agent: &Agent, loop_id: &str) -> anyhow::Result<Option<Value>> {
    let current = super::data::current_loop(agent)?;
    if current.get("id").and_then(Value::as_str) == Some(loop_id) {
        return Ok(Some(current));
    }
    Ok(super::data::archived_loops(agent)?
        .as_array()
        .and_then(|loops| {
            loops
                .iter()
                .find(|l| l.get("id").and_then(Value::as_str) == Some(loop_id))
                .cloned()
        }))
}

pub async fn handler(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<super::AppState>>,
    axum::extract::Path((agent, loop_id)): axum::extract::Path<(String, String)>,
) -> Response {
    tokio::task::spawn_blocking(move || match state.agent(&agent) {
        Some(found) => serve(found, &loop_id),
        None => error(StatusCode::NOT_FOUND, format!("unknown agent {agent:?}")),
    })
    .await
    .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// The answer for one request (blocking file work).
pub fn serve(agent: &Agent, loop_id: &str) -> Response {
    if let Err(problem) = ids::check("loop", loop_id) {
        return error(StatusCode::BAD_REQUEST, format!("{problem:#}"));
    }
    let found = match find_loop(agent, loop_id) {
        Ok(Some(found)) => found,
        Ok(None) => return error(StatusCode::NOT_FOUND, format!("unknown loop {loop_id:?}")),
        Err(problem) => return error(StatusCode::INTERNAL_SERVER_ERROR, format!("{problem:#}")),
    };
    let Some(receipt) = found.get("receipt").and_then(Value::as_str) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("loop {loop_id:?} has no receipt"),
        );
    };
    let roots = [agent.project_root.clone(), agent.ctx().state_root.clone()];
    let path = match resolve(receipt, &agent.project_root, &roots) {
        Ok(Some(path)) => path,
        Ok(None) => {
            return error(
                StatusCode::NOT_FOUND,
                format!("the receipt {receipt:?} is gone"),
            );
        }
        Err(problem) => return error(StatusCode::FORBIDDEN, problem),
    };
    match fsread::read_bytes(&path, MAX_RECEIPT, fsread::Links::Refuse) {
        Ok(Some(bytes)) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "sandbox; default-src 'none'",
                ),
                (header::CACHE_CONTROL, "no-store"),
            ],
            String::from_utf8_lossy(&bytes).into_owned(),
        )
            .into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("the receipt {receipt:?} is gone"),
        ),
        Err(problem) => error(StatusCode::FORBIDDEN, format!("{problem}")),
    }
}

/// A JSON error as the rest of the API answers one (the API's own helper
/// is not used here: the API routes to this file).
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": message.into()})),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_the_project_are_served() {
        let base = std::env::temp_dir().join(format!("receipt-test-{}", std::process::id()));
        let project = base.join("project");
        std::fs::create_dir_all(project.join(".claude/orchestrator/receipts")).unwrap();
        std::fs::write(project.join(".claude/orchestrator/receipts/r.md"), "ok").unwrap();
        std::fs::write(base.join("secret"), "no").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), project.join("link")).unwrap();
        let roots = [project.clone()];
        let inside = resolve(".claude/orchestrator/receipts/r.md", &project, &roots).unwrap();
        assert!(inside.is_some_and(|p| p.ends_with("receipts/r.md")));
        assert!(
            resolve("../secret", &project, &roots).is_err(),
            "dot-dot leads out"
        );
        assert!(
            resolve("link", &project, &roots).is_err(),
            "a link leads out"
        );
        let absolute = base.join("secret");
        assert!(resolve(absolute.to_str().unwrap(), &project, &roots).is_err());
        assert_eq!(resolve("missing.md", &project, &roots), Ok(None));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
