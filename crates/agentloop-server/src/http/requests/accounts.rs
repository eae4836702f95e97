//! Signing in, and reading the audit log.

use schemars::JsonSchema;
use serde::Deserialize;

use super::body::RequestBody;
use crate::http::error::ApiError;

/// `POST /api/session`: a bearer token to exchange for a session cookie.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SignIn {
    /// The user's API token.
    #[schemars(pattern(r"\S"))]
    pub token: String,
}

impl RequestBody for SignIn {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request("`token` (a string) is required")
    }
}

/// `GET /api/audit`: which entries of the audit log to read.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this project's (one you own): every user's actions on it.
    /// Without it, your own actions.
    pub project_id: Option<String>,
    /// Only this user's (another user's only with `project_id`).
    pub user_id: Option<String>,
    /// Only at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Only before this time (Unix milliseconds).
    pub until: Option<i64>,
    /// At most this many, the newest (1 to 1000; 100 by default).
    pub limit: Option<u32>,
}
