//! Loop runs: their records, leases, event logs and why they ended.

use agentloop_types::{LoopEvent, RunState, ToolUseBlock};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Lifecycle of a stored loop run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Created, not started.
    Pending,
    /// A worker is running it.
    Running,
    /// Waiting for a pending tool call's result.
    Suspended,
    /// Ended normally.
    Completed,
    /// Ended with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Suspended => "suspended",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "running" => Self::Running,
            "suspended" => Self::Suspended,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// What [`RunStore::renew_leases`](crate::RunStore::renew_leases) found
/// for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseRenewal {
    /// The owner still held the lease; it now lasts until the new expiry.
    Renewed,
    /// The lease was not renewed: another owner holds it, it was released,
    /// or the run does not exist.
    Lost,
}

/// A stored loop run: its state, outcome and lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Id.
    pub id: String,
    /// The chat it runs in, if any; the run is deleted with it.
    pub chat_id: Option<String>,
    /// Lifecycle status.
    pub status: RunStatus,
    /// The machine state, for resuming.
    pub state: Option<RunState>,
    /// The result, once ended (a serialised `LoopResult` or any JSON).
    pub result: Option<Value>,
    /// The tool call a suspended run waits on.
    pub pending_tool_call: Option<ToolUseBlock>,
    /// Why it ended, when its host says (a failure's kind, a person's
    /// cancel). A hosted run's record carries it to the host's own record
    /// in the same write (see [`AgentRunStatus`](super::AgentRunStatus)).
    pub end_reason: Option<EndReason>,
    /// The worker holding the lease.
    pub lease_owner: Option<String>,
    /// When the lease ends (Unix ms).
    pub lease_expires_at: Option<i64>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// Why an agent run ended other than by its loop completing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndReason {
    /// A short machine-readable kind: `cancel` for a run a person
    /// cancelled, `workflow_complete` for a run force-completed because its
    /// task was marked done; for failed runs the kind of error
    /// (`provider`, `tool`, ...).
    pub kind: String,
    /// A sentence for people.
    pub message: String,
}

impl EndReason {
    /// A reason of `kind` with `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }

    /// Why runs are stopped when their task is marked done.
    pub fn workflow_complete() -> Self {
        Self::new(
            "workflow_complete",
            "stopped because its task was marked done",
        )
    }
}

/// A stored event of a run's event log.
pub type StoredEvent = LoopEvent;
