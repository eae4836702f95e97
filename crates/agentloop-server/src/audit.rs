//! The audit log: who did what, when, from which address. Every change
//! made over the API is recorded once it succeeded (see
//! `http::audit`, which names each route's action, and
//! `http::protocol_audit` for what A2A and MCP calls do), and so are the
//! operator's account changes (`agentloop users`). A request that starts
//! an agent run has its entry written with the run ([`StartEntry`]). An
//! entry holds ids, the action, the client address and a small detail:
//! never a body, a header, a query or a token. Entries are only appended.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// The entry of an audited request while its route runs (see
/// `http::audit`), kept for the request's future alone: a start the
/// request makes writes the entry with the run it starts (one write, not
/// two), and the request's entry is then not written again.
#[derive(Debug)]
pub struct Pending {
    action: Action,
    written: AtomicBool,
}

tokio::task_local! {
    static REQUEST: Arc<Pending>;
}

impl Pending {
    /// `action`, not yet written; its project and target are filled in by
    /// whoever writes it.
    pub fn new(action: Action) -> Arc<Self> {
        Arc::new(Self {
            action,
            written: AtomicBool::new(false),
        })
    }

    /// Runs `route` with this entry pending for what it starts.
    pub async fn during<F: Future>(self: &Arc<Self>, route: F) -> F::Output {
        REQUEST.scope(Arc::clone(self), route).await
    }

    /// The entry as the request came in.
    pub fn action(&self) -> &Action {
        &self.action
    }

    /// Whether a start wrote the entry.
    pub fn is_written(&self) -> bool {
        self.written.load(Ordering::Acquire)
    }
}

/// The audit entry of the request starting an agent run, written in the
/// start's own write (see `crate::runner::create_agent_run`).
#[derive(Debug)]
pub struct StartEntry {
    /// The entry: the request's action, on the run started.
    pub entry: AuditEntry,
    pending: Arc<Pending>,
}

impl StartEntry {
    /// The entry of the audited request this start runs in, naming run
    /// `run_id` of `project_id`, at `at` (Unix ms); `None` outside an
    /// audited request (a chain's next link, a start of the server's own),
    /// or once the request's entry was written.
    pub fn pending(project_id: &str, run_id: &str, at: i64) -> Option<Self> {
        let pending = REQUEST.try_with(Arc::clone).ok()?;
        if pending.is_written() {
            return None;
        }
        let action = &pending.action;
        let entry = AuditEntry {
            id: new_id(),
            at,
            user_id: action.user_id.clone(),
            action: action.action.clone(),
            project_id: Some(project_id.to_owned()),
            target: Some(run_id.to_owned()),
            address: action.address.clone(),
            detail: action.detail.clone(),
        };
        Some(Self { entry, pending })
    }

    /// The start was written, and the entry with it.
    pub fn written(self) {
        self.pending.written.store(true, Ordering::Release);
    }
}
