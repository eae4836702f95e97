//! The rate limit middleware: every request is counted against its client
//! ([`crate::rate_limit`]) before any route runs; past the limit the answer
//! is a JSON 429 with `Retry-After`. A stream (SSE, WebSocket) is one
//! request, counted when it opens.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::extract::{KnownToken, presented_token};
use crate::rate_limit::{Client, retry_after_secs};
use crate::state::AppState;
use crate::users::user_for_token;

/// Counts the request against its client; answers 429 when over.
pub(super) async fn limit_rate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(rates) = state.rates.clone() else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let client = client_of(&state, &mut parts).await;
    match rates.check(&client) {
        Ok(()) => next.run(Request::from_parts(parts, body)).await,
        Err(wait) => too_many_requests(retry_after_secs(wait)),
    }
}

/// Whose request this is: the user its token authenticates, else the
/// address it comes from (its peer, or the client a trusted proxy names).
/// The lookup is kept on the request for the route's own authentication.
async fn client_of(state: &AppState, parts: &mut Parts) -> Client {
    if let Some(token) = presented_token(parts) {
        let token = token.trim().to_owned();
        // A store that fails here fails the route's own lookup too, which
        // answers for it; meanwhile the request counts by its peer.
        if let Ok(user) = user_for_token(&*state.store, &token).await {
            let client = user.as_ref().map(|user| {
                tracing::Span::current().record("user_id", user.id.as_str());
                Client::User(user.id.clone())
            });
            parts.extensions.insert(KnownToken { token, user });
            if let Some(client) = client {
                return client;
            }
        }
    }
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    Client::address(peer.map(|peer| {
        state
            .config
            .trusted_proxies
            .client_address(peer, &parts.headers)
    }))
}

fn too_many_requests(retry_after: u64) -> Response {
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many requests: try again in {retry_after} s"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}
