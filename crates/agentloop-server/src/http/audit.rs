//! Records the API's changes in the audit log ([`crate::audit`]): a
//! request that changes something (its route in [`ACTIONS`]) and
//! succeeded (2xx) is recorded with its user, the client's address, the
//! ids its path names and the project they belong to (for a deletion read
//! before the route runs, so it still names its project). A request that
//! starts an agent run has its entry written with the run, in the start's
//! one write ([`crate::audit::StartEntry`]). Nothing of the body, the
//! query or the headers is kept. What a protocol request (`/a2a`, `/mcp`)
//! did is recorded by [`super::protocol_audit`]. `GET /api/audit` reads
//! it.

use axum::Json;
use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::error::ApiError;
use super::extract::{AuthUser, KnownToken, presented_token};
use super::requests::AuditQuery;
use super::responses::{AuditEntryShape, AuditShape};
use super::service;
use crate::audit::{Action, Pending, record};
use crate::state::AppState;
use crate::users::user_for_token;

/// The user a sign-in signed in, put on its answer by the route (the
/// request itself presents no token).
#[derive(Debug, Clone)]
pub(crate) struct SignedIn(pub String);

/// What a creation created (its id), put on its answer by the route: the
/// entry's target, and its project when it is one. A route whose path
/// names its target otherwise (a member by name) puts the id here too.
#[derive(Debug, Clone)]
pub(crate) struct Created(pub String);

/// More detail for the entry, put on its answer by the route (a JSON
/// object, never a secret): merged into the entry's detail.
#[derive(Debug, Clone)]
pub(crate) struct AuditNote(pub serde_json::Value);

/// What a request did when its route's action depends on its body (the
/// AI SDK chat route starts a run or decides a waiting run's calls), put
/// on its answer by the route: the entry's action and target, in place of
/// the route's.
#[derive(Debug, Clone)]
pub(crate) struct AuditAction {
    pub action: &'static str,
    pub target: String,
}

/// Each audited route (method and template) and its action.
pub const ACTIONS: &[(&str, &str, &str)] = &[
    ("POST", "/api/session", "session.sign_in"),
    ("DELETE", "/api/session", "session.sign_out"),
    ("POST", "/api/projects", "project.create"),
    ("PATCH", "/api/projects/{project_id}", "project.settings"),
    ("DELETE", "/api/projects/{project_id}", "project.delete"),
    ("POST", "/api/projects/{project_id}/tasks", "task.create"),
    ("DELETE", "/api/tasks/{task_id}", "task.delete"),
    ("PUT", "/api/tasks/{task_id}/document", "task.document"),
    (
        "PUT",
        "/api/tasks/{task_id}/workflow-complete",
        "task.mark_done",
    ),
    ("POST", "/api/tasks/{task_id}/agent-runs", "run.start"),
    ("POST", "/api/tasks/{task_id}/ag-ui", "run.start"),
    // Or `run.decide` on a waiting run (see `AuditAction`).
    ("POST", "/api/tasks/{task_id}/ai-sdk", "run.start"),
    ("POST", "/api/tasks/{task_id}/inputs", "run.message"),
    ("POST", "/api/agent-runs/{run_id}/inputs", "run.message"),
    ("POST", "/api/agent-runs/{run_id}/decisions", "run.decide"),
    ("POST", "/api/agent-runs/{run_id}/cancel", "run.cancel"),
    ("POST", "/api/agent-runs/{run_id}/fork", "run.fork"),
    ("POST", "/api/agent-runs/{run_id}/rewind", "run.rewind"),
    (
        "PUT",
        "/api/projects/{project_id}/webhooks",
        "webhooks.change",
    ),
    (
        "DELETE",
        "/api/projects/{project_id}/webhooks",
        "webhooks.remove",
    ),
    ("PUT", "/api/projects/{project_id}/budgets", "budget.change"),
    ("PUT", "/api/tasks/{task_id}/budgets", "budget.change"),
    ("PUT", "/api/me/budgets", "budget.change"),
    (
        "PATCH",
        "/api/projects/{project_id}/memories/{memory_id}",
        "memory.edit",
    ),
    (
        "DELETE",
        "/api/projects/{project_id}/memories/{memory_id}",
        "memory.delete",
    ),
    (
        "POST",
        "/api/projects/{project_id}/schedules",
        "schedule.create",
    ),
    ("PATCH", "/api/schedules/{schedule_id}", "schedule.change"),
    ("POST", "/api/projects/{project_id}/members", "member.add"),
    (
        "PATCH",
        "/api/projects/{project_id}/members/{user}",
        "member.role",
    ),
    (
        "DELETE",
        "/api/projects/{project_id}/members/{user}",
        "member.remove",
    ),
    ("DELETE", "/api/schedules/{schedule_id}", "schedule.delete"),
    (
        "PUT",
        "/api/schedules/{schedule_id}/budgets",
        "budget.change",
    ),
];

/// The action of a request to `route` with `method`, if it is audited.
fn action_of(method: &Method, route: &str) -> Option<&'static str> {
    ACTIONS
        .iter()
        .find(|(m, r, _)| *m == method.as_str() && *r == route)
        .map(|(_, _, action)| *action)
}

/// The ids a path names, by the template's parameter names.
fn path_ids(route: &str, path: &str) -> Vec<(String, String)> {
    route
        .split('/')
        .zip(path.split('/'))
        .filter_map(|(template, actual)| {
            let name = template.strip_prefix('{')?.strip_suffix('}')?;
            Some((name.to_owned(), actual.to_owned()))
        })
        .collect()
}

/// The project the ids belong to: named, or the task's or the run's.
async fn project_of(state: &AppState, ids: &[(String, String)]) -> Option<String> {
    let id = |name: &str| ids.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    if let Some(project) = id("project_id") {
        return Some(project);
    }
    if let Some(schedule) = id("schedule_id") {
        return Some(state.store.get_schedule(&schedule).await.ok()?.project_id);
    }
    let task_id = match (id("task_id"), id("run_id")) {
        (Some(task), _) => task,
        (None, Some(run)) => state.store.get_agent_run(&run).await.ok()?.task_id,
        (None, None) => return None,
    };
    Some(state.store.get_task(&task_id).await.ok()?.project_id)
}

/// `GET /api/audit`: entries of the audit log (see
/// [`service::audit_log`]).
pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<AuditShape>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let entries = service::audit_log(&state, &user, query).await?;
    Ok(Json(AuditShape {
        entries: entries.iter().map(AuditEntryShape::from).collect(),
    }))
}

/// The middleware: see the module's documentation.
pub(super) async fn record_changes(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let Some((action, route)) =
        route.and_then(|route| action_of(request.method(), &route).map(|action| (action, route)))
    else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let ids = path_ids(&route, parts.uri.path());
    // What a deletion names is gone once the route ran: its project is
    // read before. Others are read after, and only when no start wrote
    // the entry with its run.
    let project_before = if parts.method == Method::DELETE {
        project_of(&state, &ids).await
    } else {
        None
    };
    let known = parts.extensions.get::<KnownToken>().cloned();
    let token = presented_token(&parts).map(|t| t.trim().to_owned());
    let address = super::protocol_audit::client_address(&state, &parts);
    // The user is who the token names as the request comes in: a sign-out
    // revokes it on the way.
    let user_id = match (known, &token) {
        (Some(known), Some(token)) if known.token == *token => known.user.map(|u| u.id),
        (_, Some(token)) => match user_for_token(&*state.store, token).await {
            Ok(user) => {
                // Kept on the request, as the rate limiter keeps it: the
                // route's own authentication does not ask the store again.
                let id = user.as_ref().map(|u| u.id.clone());
                parts.extensions.insert(KnownToken {
                    token: token.clone(),
                    user,
                });
                id
            }
            // The route's own lookup meets the same store and answers.
            Err(_) => None,
        },
        (_, None) => None,
    };
    let pending = Pending::new(Action {
        user_id,
        action: action.to_owned(),
        project_id: None,
        target: None,
        address,
        detail: json!({
            "method": parts.method.to_string(),
            "route": route,
        }),
    });
    let response = pending
        .during(next.run(Request::from_parts(parts, body)))
        .await;
    if !response.status().is_success() || pending.is_written() {
        return response;
    }
    let mut entry = pending.action().clone();
    if let Some(SignedIn(id)) = response.extensions().get::<SignedIn>() {
        entry.user_id = Some(id.clone());
    }
    entry.target = ids.last().map(|(_, id)| id.clone());
    entry.project_id = match project_before {
        Some(project) => Some(project),
        None => project_of(&state, &ids).await,
    };
    if let Some(Created(id)) = response.extensions().get::<Created>() {
        if action == "project.create" {
            entry.project_id = Some(id.clone());
        }
        entry.target = Some(id.clone());
    }
    if let Some(did) = response.extensions().get::<AuditAction>() {
        entry.action = did.action.to_owned();
        entry.target = Some(did.target.clone());
    }
    if let Some(AuditNote(note)) = response.extensions().get::<AuditNote>()
        && let (Some(detail), Some(note)) = (entry.detail.as_object_mut(), note.as_object())
    {
        detail.extend(note.clone());
    }
    if let Err(error) = record(&*state.store, entry).await {
        tracing::error!(%error, action, "the audit log could not be written");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_ids_by_the_template() {
        assert_eq!(
            path_ids(
                "/api/projects/{project_id}/memories/{memory_id}",
                "/api/projects/p1/memories/m2"
            ),
            vec![
                ("project_id".to_owned(), "p1".to_owned()),
                ("memory_id".to_owned(), "m2".to_owned())
            ]
        );
        assert!(path_ids("/api/session", "/api/session").is_empty());
        assert_eq!(
            action_of(&Method::POST, "/api/agent-runs/{run_id}/cancel"),
            Some("run.cancel")
        );
        assert_eq!(action_of(&Method::GET, "/api/agent-runs/{run_id}"), None);
    }
}
