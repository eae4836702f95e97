//! The HTTP layer: the router and its middleware (request log and
//! metric, per-client rate limit, JSON error bodies, time and size
//! limits, readiness). Health is outside the rate limit: a load balancer's
//! probe, or a user past a burst, is never refused it.
//!
//! [`routes`] is the one table of the API's routes, from which the router
//! and the [`openapi`] document are built; [`requests`] and [`responses`]
//! (with [`crate::shapes`]) are the types of the bodies and answers;
//! [`service`] holds the use cases every protocol calls (REST here, and
//! [`mcp`], [`a2a`], [`ag_ui`], [`ai_sdk`]); [`extract`] what handlers take from a
//! request; [`error`] the one error answer; [`web`] the page.
//!
//! Nothing below this layer imports from it: the use cases call the run
//! lifecycle ([`crate::drive`], [`crate::waiting`], [`crate::runner`]) and
//! the state, and turn their typed errors into [`ApiError`] here.

pub mod a2a;
mod a2a_list;
mod a2a_task;
pub mod ag_ui;
pub mod agent_runs;
pub mod ai_sdk;
mod audit;
pub mod budget_shapes;
pub mod budgets;
pub mod error;
pub mod events;
pub mod extract;
pub mod fork;
pub mod inspect;
pub mod mcp;
pub mod member_shapes;
pub mod members;
pub mod memories;
mod meta;
pub mod openapi;
pub mod projects;
mod protocol_audit;
mod rate_limit;
pub mod requests;
pub mod responses;
pub mod route;
pub mod routes;
pub mod run_files;
pub mod schedule_shapes;
pub mod schedules;
pub mod service;
pub mod session;
mod streams;
pub mod tasks;
pub mod web;
pub mod webhooks;
pub mod ws;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use tracing::Instrument;

use crate::metrics::HttpLabels;
use crate::state::AppState;
use error::ApiError;

/// The server's router: the routes of [`routes::routes`], each with its
/// limits, then the page and `/mcp`.
pub fn router(state: AppState) -> Router {
    let timeout = state.config.request_timeout;
    let mut limited = Router::new();
    let mut unlimited = Router::new();
    for route in routes::routes() {
        let handler = if route.time_limited {
            route
                .handler
                .layer(middleware::from_fn_with_state(timeout, time_limit))
        } else {
            route.handler
        };
        let path = axum_path(route.path);
        if route.rate_limited {
            limited = limited.route(&path, handler);
        } else {
            unlimited = unlimited.route(&path, handler);
        }
    }
    limited
        .merge(mcp::router(state.clone()))
        .merge(web::routes())
        .fallback(|| async { ApiError::not_found("no such route") })
        .layer(middleware::from_fn_with_state(state.clone(), until_ready))
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        // Inside the rate limit, whose token lookup it reuses.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            audit::record_changes,
        ))
        // Inside the log, so a refused request is logged and counted too.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            rate_limit::limit_rate,
        ))
        // Added after the rate limit's layer, which therefore never sees
        // them (health: a probe is never refused).
        .merge(unlimited)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            streams::end_when_revoked,
        ))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), log_request))
        .with_state(state)
}

/// A path of the table as the router names it: each parameter in
/// snake_case (`{taskId}` is `{task_id}`), the route template logs and
/// metrics have always shown.
fn axum_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 4);
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => in_param = true,
            '}' => in_param = false,
            c if in_param && c.is_ascii_uppercase() => {
                out.push('_');
                out.push(c.to_ascii_lowercase());
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Answers 503 (with `Retry-After`) saying what the instance waits for,
/// until it is ready to serve.
async fn until_ready(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match state.readiness.waiting_for() {
        None => next.run(request).await,
        Some(what) => {
            let mut response = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the server is starting, waiting for {what}; try again shortly"),
            )
            .into_response();
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(1),
            );
            response
        }
    }
}

/// One log line and one metric per request: method, route template (never
/// the raw path or query, which may carry a token), status, latency, the
/// authenticated user (recorded on the span by the auth extractors) and a
/// request id, also returned as `x-request-id`. The line is DEBUG (a page
/// left open sends requests all day; INFO keeps what an operator acts
/// on), WARN for a server error.
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
    let latency_ms = log_millis(started.elapsed());
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(http.response.status_code = status, latency_ms, "request");
        } else {
            tracing::debug!(http.response.status_code = status, latency_ms, "request");
        }
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

/// The methods the route table has for `path`, upper-case.
pub fn allowed_methods(path: &str) -> Vec<String> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    routes::routes()
        .iter()
        .map(|route| (route.method.as_str(), route.path))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use axum::routing::get;

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

    #[test]
    fn the_router_names_parameters_in_snake_case() {
        assert_eq!(
            axum_path("/api/projects/{projectId}/tasks"),
            "/api/projects/{project_id}/tasks"
        );
        assert_eq!(
            axum_path("/api/agent-runs/{runId}"),
            "/api/agent-runs/{run_id}"
        );
        assert_eq!(axum_path("/api/health"), "/api/health");
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
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "the request took too long");
    }
}
