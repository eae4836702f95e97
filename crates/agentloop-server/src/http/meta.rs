//! The server's own routes: health and the caller.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::extract::AuthUser;
use super::responses::{Health, UserShape};
use crate::state::AppState;

/// `GET /api/health`: 200 `{"ok": true, "status": "ok"}` when the instance
/// serves; 503 `{"ok": false, "status": "starting", "waiting_for": ...}`
/// (with `Retry-After`) while it waits for something before it can (see
/// [`crate::readiness`]). Never rate limited.
pub(super) async fn health(State(state): State<AppState>) -> Response {
    match state.readiness.waiting_for() {
        None => Json(Health {
            ok: true,
            status: "ok",
            waiting_for: None,
        })
        .into_response(),
        Some(what) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, "1")],
            Json(Health {
                ok: false,
                status: "starting",
                waiting_for: Some(what.to_string()),
            }),
        )
            .into_response(),
    }
}

/// `GET /api/me`: the caller.
pub(super) async fn me(AuthUser(user): AuthUser) -> Json<UserShape> {
    Json(UserShape::from(&user))
}
