//! Event streams (`text/event-stream`: a run's events, AG-UI, A2A) end
//! once the token that opened them stops authenticating: revoked (by any
//! instance, or `agentloop users`), expired, or its user deleted. See
//! [`crate::users::until_invalid`].

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

use super::extract::presented_token;
use crate::state::AppState;
use crate::users::until_invalid;

/// Ends the body of an event stream once the request's token stops
/// authenticating; any other response passes unchanged.
pub(super) async fn end_when_revoked(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let token = presented_token(&parts).map(|t| t.trim().to_owned());
    let response = next.run(Request::from_parts(parts, body)).await;
    let Some(token) = token else {
        return response;
    };
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let revoked = Box::pin(async move {
        until_invalid(
            &*state.store,
            &token,
            state.config.token_check,
            &state.revocations,
        )
        .await;
    });
    let stream = body.into_data_stream().take_until(revoked);
    Response::from_parts(parts, Body::from_stream(stream))
}
