//! Browser sign-in: a bearer token is exchanged for a session, an
//! `HttpOnly`, `SameSite=Strict` cookie holding a token of its own (issued
//! for the same user, revoked at sign-out). Requests authenticated by the
//! cookie that change anything must carry the session's CSRF token in
//! `x-csrf-token`; the page reads it from this route, which no other site
//! can (no CORS), and it cannot be derived without the cookie.

use axum::Json;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{ApiJson, AuthUser, authenticate};
use crate::error::ApiError;
use crate::ids::token_hash;
use crate::state::AppState;
use crate::users::{issue_token, revoke_token};

/// The session cookie's name.
pub(crate) const COOKIE: &str = "agentloop_session";
/// The header a cookie-authenticated change carries.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a browser keeps the session cookie (30 days).
const MAX_AGE_SECS: u64 = 30 * 24 * 3600;

/// The CSRF token of a session.
pub(crate) fn csrf_token(session: &str) -> String {
    token_hash(&format!("csrf:{session}"))
}

/// The session token a request's cookie carries, if any.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then(|| value.to_owned())
        })
}

/// Whether a cookie-authenticated request may go on: reads always; a
/// change only with the session's CSRF token.
pub(crate) fn check_csrf(parts: &Parts, session: &str) -> Result<(), ApiError> {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if sent.is_some_and(|sent| constant_time_eq(sent, &csrf_token(session))) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "missing or wrong x-csrf-token for a change made with the session cookie",
        ))
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn cookie(value: &str, max_age: u64) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}"
    ))
    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "cannot set the cookie"))
}

/// `POST /api/session {"token": "..."}`: signs in.
pub(super) async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson,
) -> Result<Response, ApiError> {
    // A form on another site cannot send JSON; a script there would need
    // CORS, which this server never grants.
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "sign in with a JSON body: {\"token\": \"...\"}",
        ));
    }
    let Some(Value::String(token)) = body.get("token") else {
        return Err(ApiError::bad_request("`token` (a string) is required"));
    };
    let user = authenticate(&state, token).await?;
    let session = issue_token(&*state.store, &user.id).await?;
    let mut response = (
        StatusCode::CREATED,
        Json(json!({ "user": user, "csrf": csrf_token(&session) })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&session, MAX_AGE_SECS)?);
    Ok(response)
}

/// `GET /api/session`: who is signed in, and the CSRF token.
pub(super) async fn get_one(
    AuthUser(user): AuthUser,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let session = session_cookie(&headers).ok_or_else(ApiError::unauthorized)?;
    Ok(Json(json!({ "user": user, "csrf": csrf_token(&session) })))
}

/// `DELETE /api/session`: signs out; the session's token stops working.
pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(_): AuthUser,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Some(session) = session_cookie(&headers) {
        revoke_token(&*state.store, &session).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie("", 0)?);
    Ok(response)
}
