//! Tasks, their chains of agent runs, and how an agent run starts.

use agentloop_types::Message;
use serde::{Deserialize, Serialize};

use super::chats::Chat;
use super::runs::{EndReason, RunRecord, RunStatus};
use super::users::AuditEntry;

/// A task (seed 004): work on a project done by chained agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Id.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Title.
    pub title: String,
    /// When true, the implementation/review loop stops chaining.
    pub workflow_complete: bool,
    /// Where its chain of agent runs stands.
    #[serde(default)]
    pub chain: TaskChain,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// Where a task's chain of agent runs stands: when a person last started
/// one of its agents (the runs created since then are its current chain),
/// and why the chain ended, when a bound ended it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskChain {
    /// When a person last started an agent of the task (Unix ms); `None`
    /// before any did.
    #[serde(default)]
    pub started_at: Option<i64>,
    /// Why the current chain ended at a bound; `None` while it goes on, or
    /// when it ended otherwise.
    #[serde(default)]
    pub end: Option<ChainEnd>,
}

/// A chain of agent runs ended at one of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainEnd {
    /// Which bound: `max_runs`, `max_tokens` or `max_cost`.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
    /// The agent run after which the chain ended.
    pub agent_run_id: String,
    /// Agent runs in the chain.
    pub runs: u64,
    /// Tokens its runs spent (input, cache and output).
    pub tokens: u64,
    /// What its runs cost, in millionths of a US dollar.
    pub cost_micro_usd: u64,
    /// When it ended (Unix ms).
    pub at: i64,
}

/// Kind of agent run (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentType {
    /// Interactive planning; never chained.
    Planification,
    /// Implementation; chains to review.
    Implementation,
    /// Review; chains to implementation.
    Review,
}

impl AgentType {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Planification => "planification",
            Self::Implementation => "implementation",
            Self::Review => "review",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "planification" => Self::Planification,
            "implementation" => Self::Implementation,
            "review" => Self::Review,
            _ => return None,
        })
    }
}

/// Status of an agent run (seed 004).
///
/// An agent run has one status: its run record's ([`of_record`](Self::of_record)).
/// The store writes it in the same statement that moves the record (a
/// trigger on SQL backends), so nothing re-syncs the two; the one other
/// writer is a person's end (a cancel or Mark Done,
/// [`TaskStore::finish_agent_run`](crate::TaskStore::finish_agent_run)),
/// which wins: an ended agent run no longer follows its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRunStatus {
    /// Running; at most one running or waiting per task.
    Running,
    /// Stopped to wait for a person: approvals of calls or answers to
    /// questions. It holds no lease and nothing executes it; decisions
    /// resume it. It keeps its task's one active slot.
    Waiting,
    /// Its loop completed, or it was force-completed when its task was
    /// marked done (then [`AgentRun::end_reason`] says so and the chain
    /// stops).
    Completed,
    /// Failed; the chain stops. [`AgentRun::end_reason`] says why.
    Failed,
    /// Cancelled by a person before its loop ended
    /// ([`AgentRun::end_reason`] says who); the chain stops.
    Cancelled,
}

impl AgentRunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status an active agent run takes when its record moves to
    /// `status` (the mapping the SQL backends' trigger spells out too).
    pub fn of_record(status: RunStatus) -> Self {
        match status {
            RunStatus::Pending | RunStatus::Running => Self::Running,
            RunStatus::Suspended => Self::Waiting,
            RunStatus::Completed => Self::Completed,
            RunStatus::Failed => Self::Failed,
            RunStatus::Cancelled => Self::Cancelled,
        }
    }

    /// Running or waiting: the run has not ended and holds its task's
    /// one active slot.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Waiting)
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// One agent run of a task (seed 004).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRun {
    /// Id.
    pub id: String,
    /// The task.
    pub task_id: String,
    /// Which agent.
    pub agent_type: AgentType,
    /// Status.
    pub status: AgentRunStatus,
    /// The conversation it runs in, once linked.
    pub conversation_id: Option<String>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Completion time (Unix ms).
    pub completed_at: Option<i64>,
    /// Why a failed or cancelled run ended.
    #[serde(default)]
    pub end_reason: Option<EndReason>,
}

/// Everything a new agent run starts with, written together by
/// [`TaskStore::start_agent_run`](crate::TaskStore::start_agent_run): the
/// agent run linked to its conversation, the chat holding its first
/// message, and the run record (the run's one record, with its lease).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRunStart {
    /// The agent run; its `conversation_id` names `conversation`.
    pub agent_run: AgentRun,
    /// The chat the run's conversation is held in.
    pub chat: Chat,
    /// The chat's first message.
    pub first_message: Message,
    /// The conversation, in `chat`.
    pub conversation: Conversation,
    /// The run record: same id as the agent run, in `chat`, usually with
    /// the lease of the instance that executes it.
    pub record: RunRecord,
    /// Whether the run begins a new chain of its task (a person started
    /// it): the task's [`TaskChain`] restarts at the agent run's
    /// `created_at`. A start that is refused leaves the chain as it was.
    pub begins_chain: bool,
    /// The audit log's entry for this start, appended in the same write
    /// (see [`AuditStore`](crate::AuditStore)).
    pub audit: Option<AuditEntry>,
    /// The schedule the agent run spends for (a tick started it, or a
    /// run such a tick started chained to it), recorded in the same
    /// write (see
    /// [`SchedulesStore::schedule_of_agent_run`](crate::SchedulesStore::schedule_of_agent_run)).
    pub schedule_id: Option<String>,
}

/// A person's decision on one call a waiting agent run waits on. Decisions
/// may arrive one at a time; they are kept until the run resumes with all
/// of them, so a restart in between loses none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRunDecision {
    /// The call's id.
    pub call_id: String,
    /// What was decided.
    pub decision: agentloop_types::Decision,
    /// When (Unix ms).
    pub decided_at: i64,
}

/// A conversation of a task (seed 004), backed by a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Id.
    pub id: String,
    /// The task.
    pub task_id: String,
    /// The chat holding its messages, if any.
    pub chat_id: Option<String>,
    /// The provider or engine session id, once known.
    pub session_id: Option<String>,
    /// Creation time (Unix ms).
    pub created_at: i64,
}
