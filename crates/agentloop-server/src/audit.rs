//! The audit log: who did what, when, from which address. Every change
//! made over the API is recorded once it succeeded (see
//! `http::audit`, which names each route's action, and
//! `http::protocol_audit` for what A2A and MCP calls do), and so are the
//! operator's account changes (`agentloop users`). An entry holds ids,
//! the action, the client address and a small detail: never a body, a
//! header, a query or a token. Entries are only appended.

use agentloop_storage::model::{AuditEntry, now_millis};
use agentloop_storage::{StorageResult, Store};
use serde_json::Value;

use crate::ids::new_id;

/// What an entry records.
#[derive(Debug, Clone, Default)]
pub struct Action {
    /// The user who acted; `None` for the operator at the server's
    /// terminal.
    pub user_id: Option<String>,
    /// What was done (`run.cancel`, `token.reset`, …).
    pub action: String,
    /// The project it concerns.
    pub project_id: Option<String>,
    /// What it was done to.
    pub target: Option<String>,
    /// The client's address.
    pub address: Option<String>,
    /// More about it (a JSON object, never a secret).
    pub detail: Value,
}

/// Appends `action` to the audit log, at this moment.
pub async fn record(store: &dyn Store, action: Action) -> StorageResult<AuditEntry> {
    let entry = AuditEntry {
        id: new_id(),
        at: now_millis(),
        user_id: action.user_id,
        action: action.action,
        project_id: action.project_id,
        target: action.target,
        address: action.address,
        detail: if action.detail.is_object() {
            action.detail
        } else {
            Value::Object(serde_json::Map::new())
        },
    };
    store.append_audit(&entry).await?;
    Ok(entry)
}
