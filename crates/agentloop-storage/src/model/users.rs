//! Users, their tokens, and the audit log of what they did.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A user: the owner of projects on a server. Not part of any project, so
/// project listings and exports never see users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// A bearer token of a user, kept only as a hash (e.g. the hex SHA-256 of
/// the token). Each hash belongs to exactly one user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserToken {
    /// The token's hash; unique across all users.
    pub token_hash: String,
    /// The user it authenticates.
    pub user_id: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// When it stops authenticating (Unix ms); `None`: never.
    #[serde(default)]
    pub expires_at: Option<i64>,
}

impl UserToken {
    /// Whether it still authenticates at `now` (Unix ms).
    pub fn live_at(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}

/// One entry of the server's audit log: who did what, when, from where.
/// Entries are only ever appended; they outlive what they name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Id.
    pub id: String,
    /// When (Unix ms).
    pub at: i64,
    /// The user who acted; `None` for the operator at the server's
    /// terminal (`agentloop users`).
    pub user_id: Option<String>,
    /// What was done (`session.sign_in`, `run.cancel`, `token.reset`, …).
    pub action: String,
    /// The project it concerns, if any.
    pub project_id: Option<String>,
    /// What it was done to: a run, task, project or user id.
    pub target: Option<String>,
    /// The client's address, for an action over HTTP.
    pub address: Option<String>,
    /// More about it, never a secret (a JSON object).
    pub detail: Value,
}

/// Which audit entries to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this project's.
    pub project_id: Option<String>,
    /// Only this user's.
    pub user_id: Option<String>,
    /// Only the operator's (no user) on this target.
    pub operator_on: Option<String>,
    /// Only at or after (Unix ms).
    pub since: Option<i64>,
    /// Only before (Unix ms).
    pub until: Option<i64>,
    /// At most this many, the newest.
    pub limit: u32,
}

impl AuditFilter {
    /// Whether `entry` passes (the limit aside).
    pub fn admits(&self, entry: &AuditEntry) -> bool {
        self.project_id
            .as_ref()
            .is_none_or(|p| entry.project_id.as_ref() == Some(p))
            && self
                .user_id
                .as_ref()
                .is_none_or(|u| entry.user_id.as_ref() == Some(u))
            && self
                .operator_on
                .as_ref()
                .is_none_or(|t| entry.user_id.is_none() && entry.target.as_ref() == Some(t))
            && self.since.is_none_or(|at| entry.at >= at)
            && self.until.is_none_or(|at| entry.at < at)
    }
}
