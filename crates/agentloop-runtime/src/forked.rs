//! What marks a run's record as a fork that has not started (see
//! [`crate::fork`]), apart from the forking itself so that the runtime's
//! modules that start runs can tell one.

use agentloop_storage::model::{RunRecord, RunStatus};
use serde::{Deserialize, Serialize};

/// What a fork's record says of its origin until it starts (its
/// `result`), and what [`ChatRuntime::fork`](crate::ChatRuntime::fork) returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forked {
    /// The fork's run.
    pub run_id: String,
    /// The chat it runs in.
    pub chat_id: String,
    /// The run it was forked from.
    pub from: String,
    /// The seq of the original's step it starts from.
    pub at: u64,
}

/// The marker a fork's record holds as its `result` until it starts.
pub(crate) const FORKED: &str = "forked";

/// Whether `record` is a fork that has not started.
pub fn is_unstarted_fork(record: &RunRecord) -> bool {
    record.status == RunStatus::Pending
        && record.lease_owner.is_none()
        && record.state.is_some()
        && record
            .result
            .as_ref()
            .is_some_and(|r| r["status"] == FORKED)
}
