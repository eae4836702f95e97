//! What handlers take from a request: the authenticated user (bearer
//! token or session cookie, with its CSRF check), a JSON object body, and
//! path ids checked before any store is asked.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use serde_json::Value;

use super::error::ApiError;
use super::requests::{RequestBody, refusal};
use crate::ids::token_hash;
use crate::state::AppState;
use crate::users::{User, user_for_token};

/// The session cookie's name.
pub(crate) const COOKIE: &str = "agentloop_session";
/// The header a cookie-authenticated change carries.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
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

/// The authenticated user: `Authorization: Bearer <token>`, or the
/// browser's session cookie (a change then needs the CSRF header too).
pub struct AuthUser(pub User);

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(token) = bearer(parts) {
            return Ok(Self(authenticate_request(parts, state, &token).await?));
        }
        let session = session_cookie(&parts.headers).ok_or_else(ApiError::unauthorized)?;
        check_csrf(parts, &session)?;
        Ok(Self(authenticate_request(parts, state, &session).await?))
    }
}

/// The authenticated user of a WebSocket request: the bearer header, or
/// `?token=` for browser clients, which cannot set headers on a WebSocket.
/// Only the WebSocket route takes a token in the URL, where it would
/// otherwise end up in logs and browser history. The token is kept: the
/// socket closes once it stops authenticating.
pub struct WsUser(pub User, pub String);

impl FromRequestParts<AppState> for WsUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)
            .or_else(|| query_token(parts))
            .or_else(|| {
                same_origin(parts)
                    .then(|| session_cookie(&parts.headers))
                    .flatten()
            })
            .ok_or_else(ApiError::unauthorized)?;
        let user = authenticate_request(parts, state, &token).await?;
        Ok(Self(user, token.trim().to_owned()))
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

fn query_token(parts: &Parts) -> Option<String> {
    parts.uri.query().and_then(|q| {
        q.split('&')
            .find_map(|pair| pair.strip_prefix("token=").map(str::to_owned))
    })
}

/// The token a request presents, whichever way it does: the bearer header,
/// the session cookie, or `?token=` (which only the WebSocket route
/// accepts). Whether the route takes it that way is the extractors' call;
/// this only says whose request it is.
pub(crate) fn presented_token(parts: &Parts) -> Option<String> {
    bearer(parts)
        .or_else(|| session_cookie(&parts.headers))
        .or_else(|| query_token(parts))
}

/// A token already looked up for this request (by the rate limit or the
/// audit log, which must know the user before any route runs), so the
/// extractors do not ask the store again.
#[derive(Debug, Clone)]
pub(crate) struct KnownToken {
    /// The token, trimmed as it was looked up.
    pub token: String,
    /// Its user; `None`: it authenticates no one.
    pub user: Option<User>,
}

/// [`authenticate`], answered from the request's [`KnownToken`] when it
/// is the same token.
async fn authenticate_request(
    parts: &Parts,
    state: &AppState,
    token: &str,
) -> Result<User, ApiError> {
    match parts.extensions.get::<KnownToken>() {
        Some(known) if known.token == token.trim() => {
            known.user.clone().ok_or_else(ApiError::unauthorized)
        }
        _ => authenticate(state, token).await,
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

/// A request body of type `T` (see [`super::requests`]): malformed JSON,
/// a body over the limit, a non-object body or one not of `T`'s shape is
/// a 4xx with a JSON error naming what is wrong.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: RequestBody> FromRequest<S> for ApiJson<T> {
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
            Ok(value @ Value::Object(_)) => from_body(value).map(Self),
            Ok(_) => Err(ApiError::bad_request("the body must be a JSON object")),
            Err(e) => Err(ApiError::bad_request(format!("malformed JSON: {e}"))),
        }
    }
}

/// A JSON object as `T`, or `T`'s 400 naming the field at fault.
pub fn from_body<T: RequestBody>(mut value: Value) -> Result<T, ApiError> {
    whole_numbers_as_integers(&mut value);
    T::check(&value).map_err(T::refused)?;
    serde_path_to_error::deserialize(value).map_err(|e| T::refused(refusal(&e)))
}

/// Writes each whole number written with a fraction (`3.0`, `-463.0`) as
/// the integer it is: JSON Schema counts it as an integer, so a field the
/// document says is an integer takes it, while serde would refuse it for
/// an integer type.
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let whole = number
                .as_f64()
                .filter(|_| number.is_f64())
                .filter(|n| n.fract() == 0.0 && n.abs() < 9.0e15);
            if let Some(whole) = whole {
                // Exact: a whole f64 under 2^53 is an i64.
                #[allow(clippy::cast_possible_truncation)]
                let integer = whole as i64;
                *number = integer.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// 400 unless `id` is a valid id.
pub fn check_id(id: &str, what: &str) -> Result<(), ApiError> {
    if crate::ids::valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!("Invalid {what} ID")))
    }
}

/// Longest task title and project name, in characters: a few lines of a
/// list or a heading at most, not a document (a task's description goes
/// to its document, bounded only by the body limit).
pub const MAX_TITLE_CHARS: usize = 500;

/// Longest model id a project may name, in characters.
pub const MAX_MODEL_CHARS: usize = 200;

/// The required text field `field`, trimmed: a string with a character
/// other than white space, at most `max` characters long as sent. A
/// missing field is "required"; a long one is refused naming the limit,
/// with `field` and `max_length` in the error body.
pub fn required_text<'a>(
    text: Option<&'a str>,
    field: &str,
    max: usize,
) -> Result<&'a str, ApiError> {
    let Some(text) = text else {
        return Err(ApiError::bad_request(format!("{field} is required")));
    };
    let length = text.chars().count();
    if length > max {
        return Err(too_long(field, length, max));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(ApiError::bad_request(format!("{field} must not be empty")));
    }
    Ok(text)
}

/// The answer to a text field longer than `max` characters.
pub fn too_long(field: &str, length: usize, max: usize) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        body: serde_json::json!({
            "error": format!(
                "{field} is {length} characters long; at most {max} are allowed"
            ),
            "field": field,
            "max_length": max,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::whole_numbers_as_integers;

    #[test]
    fn a_whole_number_with_a_fraction_is_read_as_an_integer() {
        let mut body = json!({ "at": -463.0, "cost": 0.25, "list": [3.0, "3.0"], "n": 7 });
        whole_numbers_as_integers(&mut body);
        assert_eq!(
            body,
            json!({ "at": -463, "cost": 0.25, "list": [3, "3.0"], "n": 7 })
        );
        assert!(body["at"].is_i64());
    }
}
