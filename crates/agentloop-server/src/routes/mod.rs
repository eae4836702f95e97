//! The HTTP routes, their extractors and the request limits.

mod agent_runs;
mod events;
mod projects;
pub(crate) mod session;
mod tasks;
mod ws;

use std::time::Duration;

use agentloop_storage::model::{AgentRun, AgentRunStatus};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{Value, json};

use tracing::Instrument;

use crate::error::ApiError;
use crate::ids::rfc3339;
use crate::metrics::HttpLabels;
use crate::state::AppState;
use crate::users::{User, user_for_token};

/// Every route as `(method, path)`, in OpenAPI path syntax; the OpenAPI
/// document is checked against this list.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/health"),
    ("get", "/api/openapi.json"),
    ("get", "/api/me"),
    ("get", "/api/session"),
    ("post", "/api/session"),
    ("delete", "/api/session"),
    ("get", "/api/projects"),
    ("post", "/api/projects"),
    ("get", "/api/projects/{projectId}"),
    ("delete", "/api/projects/{projectId}"),
    ("patch", "/api/projects/{projectId}"),
    ("get", "/api/projects/{projectId}/tasks"),
    ("post", "/api/projects/{projectId}/tasks"),
    ("get", "/api/tasks/{taskId}"),
    ("delete", "/api/tasks/{taskId}"),
    ("get", "/api/tasks/{taskId}/document"),
    ("put", "/api/tasks/{taskId}/document"),
    ("put", "/api/tasks/{taskId}/workflow-complete"),
    ("get", "/api/tasks/{taskId}/agent-runs"),
    ("post", "/api/tasks/{taskId}/agent-runs"),
    ("get", "/api/agent-runs/{runId}"),
    ("get", "/api/agent-runs/{runId}/messages"),
    ("get", "/api/agent-runs/{runId}/events"),
    ("post", "/api/agent-runs/{runId}/cancel"),
    ("get", "/api/agent-runs/{runId}/pending"),
    ("post", "/api/agent-runs/{runId}/decisions"),
    ("get", "/api/ws"),
];

/// The server's router.
pub fn router(state: AppState) -> Router {
    let timeout = state.config.request_timeout;
    let plain = Router::new()
        .route("/api/health", get(|| async { Json(json!({ "ok": true })) }))
        .route(
            "/api/openapi.json",
            get(|State(state): State<AppState>| async move {
                Json(crate::openapi::document(state.config.allow_project_mcp))
            }),
        )
        .route("/api/me", get(me))
        .route(
            "/api/session",
            get(session::get_one)
                .post(session::create)
                .delete(session::delete),
        )
        .route("/api/projects", get(projects::list).post(projects::create))
        .route(
            "/api/projects/{project_id}",
            get(projects::get_one)
                .delete(projects::delete)
                .patch(projects::update),
        )
        .route(
            "/api/projects/{project_id}/tasks",
            get(tasks::list).post(tasks::create),
        )
        .route(
            "/api/tasks/{task_id}",
            get(tasks::get_one).delete(tasks::delete),
        )
        .route(
            "/api/tasks/{task_id}/document",
            get(tasks::get_document).put(tasks::put_document),
        )
        .route(
            "/api/tasks/{task_id}/workflow-complete",
            put(tasks::workflow_complete),
        )
        .route(
            "/api/tasks/{task_id}/agent-runs",
            get(agent_runs::list).post(agent_runs::create),
        )
        .route("/api/agent-runs/{run_id}", get(agent_runs::get_one))
        .route(
            "/api/agent-runs/{run_id}/messages",
            get(agent_runs::messages),
        )
        .route("/api/agent-runs/{run_id}/cancel", post(agent_runs::cancel))
        .route("/api/agent-runs/{run_id}/pending", get(agent_runs::pending))
        .route(
            "/api/agent-runs/{run_id}/decisions",
            post(agent_runs::decisions),
        )
        .layer(middleware::from_fn_with_state(timeout, time_limit));
    let streaming = Router::new()
        .route("/api/agent-runs/{run_id}/events", get(events::stream))
        .route("/api/ws", get(ws::upgrade));
    plain
        .merge(streaming)
        .merge(crate::web::routes())
        .fallback(|| async { ApiError::not_found("no such route") })
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), log_request))
        .with_state(state)
}

/// One log line and one metric per request: method, route template (never
/// the raw path or query, which may carry a token), status, latency, the
/// authenticated user (recorded on the span by the auth extractors) and a
/// request id, also returned as `x-request-id`.
async fn log_request(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let request_id = crate::ids::new_id();
    let span = tracing::info_span!(
        "http.request",
        http.request.method = %method,
        http.route = %route,
        request_id = %request_id,
        user_id = tracing::field::Empty,
    );
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.in_scope(|| {
        tracing::info!(
            http.response.status_code = status,
            latency_ms = log_millis(started.elapsed()),
            "request"
        );
    });
    state
        .metrics
        .http_requests
        .get_or_create(&HttpLabels {
            method,
            route,
            status,
        })
        .inc();
    if let Ok(value) = axum::http::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// A duration as logged: milliseconds to the microsecond (at most three
/// decimals), not a float's full noise. (Metrics keep seconds, unrounded,
/// as Prometheus expects.)
fn log_millis(duration: std::time::Duration) -> f64 {
    // Below 2^53 µs (285 years) the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let micros = duration.as_micros() as f64;
    micros / 1000.0
}

/// The methods [`ROUTES`] has for `path`, upper-case.
pub fn allowed_methods(path: &str) -> Vec<String> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTES
        .iter()
        .filter(|(_, template)| {
            let parts: Vec<&str> = template.split('/').collect();
            parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(part, segment)| part.starts_with('{') || part == segment)
        })
        .map(|(method, _)| method.to_ascii_uppercase())
        .collect()
}

/// Largest error body from a rejection that is carried into the JSON one.
const MAX_ERROR_TEXT: usize = 4096;

/// Turns every error answer that is not JSON — axum's rejections of paths,
/// queries and WebSocket upgrades, a 405's empty body — into
/// `{ "error": ... }` with `application/json`, so a client parses one error
/// shape whatever went wrong.
async fn json_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_ERROR_TEXT)
        .await
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .filter(|text| !text.is_empty());
    let message = match (status, text) {
        (StatusCode::METHOD_NOT_ALLOWED, _) => {
            let allowed = allowed_methods(&path).join(", ");
            if let Ok(value) = axum::http::HeaderValue::from_str(&allowed) {
                parts.headers.insert(axum::http::header::ALLOW, value);
            }
            format!("method {method} is not allowed here (allowed: {allowed})")
        }
        (_, Some(text)) => text,
        (_, None) => status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_owned(),
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let mut response = ApiError::new(status, message).into_response();
    for (name, value) in &parts.headers {
        if name != axum::http::header::CONTENT_TYPE {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
}

async fn time_limit(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            ApiError::new(StatusCode::REQUEST_TIMEOUT, "the request took too long").into_response()
        }
    }
}

async fn me(AuthUser(user): AuthUser) -> Json<User> {
    Json(user)
}

/// The authenticated user: `Authorization: Bearer <token>`, or the
/// browser's session cookie (a change then needs the CSRF header too).
pub struct AuthUser(pub User);

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(token) = bearer(parts) {
            return Ok(Self(authenticate(state, &token).await?));
        }
        let session = session::session_cookie(&parts.headers).ok_or_else(ApiError::unauthorized)?;
        session::check_csrf(parts, &session)?;
        Ok(Self(authenticate(state, &session).await?))
    }
}

/// The authenticated user of a WebSocket request: the bearer header, or
/// `?token=` for browser clients, which cannot set headers on a WebSocket.
/// Only the WebSocket route takes a token in the URL, where it would
/// otherwise end up in logs and browser history.
pub struct WsUser(pub User);

impl FromRequestParts<AppState> for WsUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let query = parts.uri.query().and_then(|q| {
            q.split('&')
                .find_map(|pair| pair.strip_prefix("token=").map(str::to_owned))
        });
        let token = bearer(parts)
            .or(query)
            .or_else(|| {
                same_origin(parts)
                    .then(|| session::session_cookie(&parts.headers))
                    .flatten()
            })
            .ok_or_else(ApiError::unauthorized)?;
        Ok(Self(authenticate(state, &token).await?))
    }
}

/// Whether a browser's request comes from a page of this server: its
/// `Origin` names the host it was sent to. (A WebSocket is not bound by
/// CORS, so the session cookie counts only for the page's own.)
fn same_origin(parts: &Parts) -> bool {
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
    };
    match (
        header(axum::http::header::ORIGIN),
        header(axum::http::header::HOST),
    ) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest == host),
        _ => false,
    }
}

fn bearer(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned)
}

pub(crate) async fn authenticate(state: &AppState, token: &str) -> Result<User, ApiError> {
    let user = user_for_token(&*state.store, token.trim())
        .await?
        .ok_or_else(ApiError::unauthorized)?;
    tracing::Span::current().record("user_id", user.id.as_str());
    Ok(user)
}

/// A JSON request body; malformed JSON, a body over the limit or a
/// non-object body is a 4xx with a JSON error.
pub struct ApiJson(pub serde_json::Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for ApiJson {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                let status = rejection.status();
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(status, "the request body is too large")
                } else {
                    ApiError::new(status, rejection.body_text())
                }
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(ApiError::bad_request("the body must be a JSON object")),
            Err(e) => Err(ApiError::bad_request(format!("malformed JSON: {e}"))),
        }
    }
}

/// An agent run as the API shows it: seed 004's shape, plus why it ended
/// when its loop did not end it: `error` (`{kind, message}`) for a failed
/// run, `stopped_by` with `stop_message` for one a person stopped: `cancel`
/// (it is `cancelled`) or `workflow_complete` (Mark Done: it is
/// `completed`).
pub fn agent_run_json(run: &AgentRun) -> Value {
    let reason = run.end_reason.as_ref();
    let failed = (run.status == AgentRunStatus::Failed)
        .then_some(reason)
        .flatten();
    // Cancelled by a person, or force-completed by Mark Done.
    let stopped = matches!(
        run.status,
        AgentRunStatus::Cancelled | AgentRunStatus::Completed
    )
    .then_some(reason)
    .flatten();
    json!({
        "id": run.id,
        "task_id": run.task_id,
        "agent_type": run.agent_type,
        "status": run.status,
        "conversation_id": run.conversation_id,
        "created_at": rfc3339(run.created_at),
        "completed_at": run.completed_at.map(rfc3339),
        "error": failed,
        "stopped_by": stopped.map(|r| &r.kind),
        "stop_message": stopped.map(|r| &r.message),
    })
}

/// 400 unless `id` is a valid id.
pub fn check_id(id: &str, what: &str) -> Result<(), ApiError> {
    if crate::ids::valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!("Invalid {what} ID")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn logged_latencies_keep_three_decimals_at_most() {
        assert_eq!(
            log_millis(Duration::from_nanos(61_100)).to_string(),
            "0.061"
        );
        assert_eq!(
            log_millis(Duration::from_nanos(61_101)).to_string(),
            "0.061"
        );
        assert_eq!(
            log_millis(Duration::from_micros(1_234_567)).to_string(),
            "1234.567"
        );
        for micros in 0..100_000u64 {
            let text = log_millis(Duration::from_micros(micros)).to_string();
            let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
            assert!(decimals <= 3, "{micros} µs logged as {text}");
        }
    }

    #[tokio::test]
    async fn a_slow_request_is_answered_408_with_json() {
        let app = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "late"
                }),
            )
            .layer(middleware::from_fn_with_state(
                Duration::from_millis(20),
                time_limit,
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/slow", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        agentloop_providers::ensure_crypto_provider();
        let response = reqwest::get(&url).await.unwrap();
        assert_eq!(response.status().as_u16(), 408);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "the request took too long");
    }
}
