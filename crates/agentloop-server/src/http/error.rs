//! The one error answer of the API ([`ApiError`]), and how the errors of
//! the layers below turn into it.

use agentloop_runtime::RuntimeError;
use agentloop_storage::StorageError;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An HTTP error answer: a status and a JSON body `{ "error": ... }` (plus
/// extra fields, e.g. `runningAgent` on 409).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// The JSON body.
    pub body: Value,
}

impl ApiError {
    /// An error with a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            body: json!({ "error": message.into() }),
        }
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404 Not Found.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// The error's message (`error` of its body).
    pub fn message(&self) -> &str {
        self.body
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("request failed")
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "missing or invalid bearer token")
    }
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> Self {
        match err {
            StorageError::NotFound { kind, .. } => Self::not_found(format!("{kind} not found")),
            StorageError::AlreadyExists { kind, .. } => {
                Self::new(StatusCode::CONFLICT, format!("{kind} already exists"))
            }
            StorageError::ActiveAgentRunExists { .. } => Self::new(
                StatusCode::CONFLICT,
                "An agent is already running for this task",
            ),
            StorageError::Invalid(message) => Self::bad_request(message),
            other => Self::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<RuntimeError> for ApiError {
    fn from(err: RuntimeError) -> Self {
        match err {
            RuntimeError::Storage(e) => e.into(),
            other => Self::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}
