//! The two ways in: a client that starts the server and talks over its
//! stdin and stdout, and streamable HTTP at one path, behind an optional
//! bearer token.

use std::future::Future;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::handler::AgentServer;
use super::host::{AgentHost, ServeError};

/// Serves `host` over this process's stdin and stdout until the client
/// closes stdin.
pub async fn serve_stdio(host: Arc<dyn AgentHost>) -> Result<(), ServeError> {
    let running = AgentServer::new(host)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Transport {
            message: e.to_string(),
        })?;
    running.waiting().await.map_err(|e| ServeError::Transport {
        message: e.to_string(),
    })?;
    Ok(())
}

/// How the streamable HTTP endpoint is reached.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The endpoint's path, e.g. `/mcp`.
    pub path: String,
    /// When set, every request must carry `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Host names (or `host:port`) the `Host` header may name; empty keeps
    /// the loopback-only default, which stops DNS-rebinding attacks on a
    /// server bound to this machine.
    pub allowed_hosts: Vec<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            bearer_token: None,
            allowed_hosts: Vec::new(),
        }
    }
}

/// Serves `host` over streamable HTTP on `listener` until `shutdown`
/// resolves. Sessions are kept, so the server can send progress and
/// elicitation requests while a call runs.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    host: Arc<dyn AgentHost>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let address = listener
        .local_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = true;
    config.cancellation_token = stop.child_token();
    if !options.allowed_hosts.is_empty() {
        config = config.with_allowed_hosts(options.allowed_hosts.clone());
    }
    let server = AgentServer::new(host);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Option<Arc<str>> = options.bearer_token.as_deref().map(Arc::from);
    let router = axum::Router::new()
        .nest_service(&options.path, service)
        .layer(middleware::from_fn(session_end_answer))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let token = token.clone();
            async move { authorize(token.as_deref(), request, next).await }
        }));
    let on_stop = stop.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            on_stop.cancel();
        })
        .await
        .map_err(|source| ServeError::Io { address, source })
}

/// Answers a session's end (`DELETE` with its `Mcp-Session-Id`) with `200
/// OK`, as the reference SDK's server does: the session is closed when
/// the answer is sent, so "accepted for later" (rmcp's `202`) is not what
/// happened, and clients treat it as a failed termination. Put it around
/// a [`StreamableHttpService`] with [`axum::middleware::from_fn`].
pub async fn session_end_answer(request: Request, next: Next) -> Response {
    let ends_a_session = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if ends_a_session && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

async fn authorize(token: Option<&str>, request: Request, next: Next) -> Response {
    let Some(token) = token else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes())) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required",
        )
            .into_response()
    }
}

/// Compares without stopping at the first difference, so the time taken
/// says nothing about how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
