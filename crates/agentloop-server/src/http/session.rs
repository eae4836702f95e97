//! Browser sign-in: a bearer token is exchanged for a session, an
//! `HttpOnly`, `SameSite=Strict` cookie holding a token of its own (issued
//! for the same user, revoked at sign-out). Requests authenticated by the
//! cookie that change anything must carry the session's CSRF token in
//! `x-csrf-token`; the page reads it from this route, which no other site
//! can (no CORS), and it cannot be derived without the cookie.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, COOKIE, csrf_token, session_cookie};
use super::requests::SignIn;
use super::responses::{SessionShape, UserShape};
use super::service;
use crate::state::AppState;

/// How long a browser keeps the session cookie (30 days).
const MAX_AGE_SECS: u64 = 30 * 24 * 3600;

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
    body: Result<ApiJson<SignIn>, ApiError>,
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
    let ApiJson(body) = body?;
    let (user, session) = service::sign_in(&state, &body.token).await?;
    let mut response = (
        StatusCode::CREATED,
        Json(SessionShape {
            user: UserShape::from(&user),
            csrf: csrf_token(&session),
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&session, MAX_AGE_SECS)?);
    response
        .extensions_mut()
        .insert(super::audit::SignedIn(user.id.clone()));
    Ok(response)
}

/// `GET /api/session`: who is signed in, and the CSRF token.
pub(super) async fn get_one(
    AuthUser(user): AuthUser,
    headers: HeaderMap,
) -> Result<Json<SessionShape>, ApiError> {
    let session = session_cookie(&headers).ok_or_else(ApiError::unauthorized)?;
    Ok(Json(SessionShape {
        user: UserShape::from(&user),
        csrf: csrf_token(&session),
    }))
}

/// `DELETE /api/session`: signs out; the session's token stops working.
pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(_): AuthUser,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Some(session) = session_cookie(&headers) {
        service::sign_out(&state, &session).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie("", 0)?);
    Ok(response)
}
