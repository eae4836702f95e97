//! The records a store keeps.
//!
//! Ids are strings chosen by the caller; timestamps are Unix milliseconds
//! chosen by the caller (see [`now_millis`]), so a record reads back exactly
//! as it was written and export/import is lossless.

use agentloop_types::{EntryKind, LoopEvent, Message, RunState, TokenTotals, ToolUseBlock};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codec::base64_bytes;
use crate::error::StorageError;

/// The current time in Unix milliseconds.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A project: the owner of chats, files, attachments and tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    /// Id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Free-form settings (model defaults, tool options ...).
    pub settings: Value,
    /// Whether its server runs ask a person before writing files or
    /// running code; `None` follows the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// Whether a project's server runs wait for a person before the calls
/// that change things (fs writes, JavaScript).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// They wait for a person's decision.
    Ask,
    /// They run without asking, inside the project folder (the fs tool is
    /// jailed there, JavaScript is sandboxed).
    Unattended,
}

impl ApprovalMode {
    /// Every mode, in the order they are listed to people.
    pub const ALL: [Self; 2] = [Self::Ask, Self::Unattended];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Unattended => "unattended",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == s)
    }
}

/// The tool call that started a minion chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinionLink {
    /// The chat whose run made the call.
    pub parent_chat_id: String,
    /// The `tool_use` id of the call.
    pub tool_use_id: String,
}

/// A chat: an ordered list of messages with settings and token totals.
/// A minion chat is a chat with a [`MinionLink`]; it is deleted with its
/// parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chat {
    /// Id.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Display title.
    pub title: String,
    /// Free-form settings (model, system prompt, tools ...).
    pub settings: Value,
    /// Tokens and cost spent in this chat.
    pub totals: TokenTotals,
    /// Set for minion chats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minion: Option<MinionLink>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// A message with its position in its chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Position: strictly increasing in append order within the chat.
    pub seq: u64,
    /// The message.
    pub message: Message,
}

/// Metadata of a stored attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentMeta {
    /// Id, referenced by `AttachmentSource::Stored`.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The chat it belongs to; the attachment is deleted with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// IANA media type.
    pub media_type: String,
    /// Original file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Size in bytes; set by the store from the data.
    pub size: u64,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// An attachment: metadata and bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// Metadata.
    #[serde(flatten)]
    pub meta: AttachmentMeta,
    /// The bytes (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

/// One entry of a project's file tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Normalised absolute path (`/a/b.txt`).
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
    /// Content (empty for directories; base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
    /// Last write time (Unix ms).
    pub modified_at: i64,
}

/// A named point a chat can roll back to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The chat.
    pub chat_id: String,
    /// Name, unique within the chat.
    pub name: String,
    /// Seq of the last message kept on rollback; `None` keeps none.
    pub message_seq: Option<u64>,
    /// The chat's totals at this point, restored on rollback.
    pub totals: TokenTotals,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

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
    /// in the same write (see [`AgentRunStatus`]).
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

/// One webhook event sent to one URL, with its attempts (a project's
/// webhook delivery log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// Id (also sent to the receiver).
    pub id: String,
    /// The project whose webhook it is.
    pub project_id: String,
    /// The event's name (`run.ended`, …).
    pub event: String,
    /// The receiver.
    pub url: String,
    /// Where it stands.
    pub state: WebhookDeliveryState,
    /// Its attempts, in order.
    pub attempts: Vec<WebhookAttempt>,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// Where a webhook delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookDeliveryState {
    /// Attempts are still being made.
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Every attempt failed, or the URL may not be reached.
    Failed,
}

impl WebhookDeliveryState {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One attempt of a webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttempt {
    /// When it started (RFC 3339).
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What went wrong, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A stored event of a run's event log.
pub type StoredEvent = LoopEvent;

/// Whose memories these are: a person's across their projects, a
/// project's, or one agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScopeKind {
    /// A user's.
    User,
    /// A project's.
    Project,
    /// An agent's.
    Agent,
}

impl MemoryScopeKind {
    /// Its stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Agent => "agent",
        }
    }

    /// The kind a stored name means.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Self::User),
            "project" => Some(Self::Project),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

/// The owner of a set of memories: a kind and the owner's id. Memories of
/// one scope are never read through another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemoryScope {
    /// User, project or agent.
    pub kind: MemoryScopeKind,
    /// The user's, project's or agent's id.
    pub id: String,
}

impl MemoryScope {
    /// The memories of user `id`.
    pub fn user(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::User,
            id: id.into(),
        }
    }

    /// The memories of project `id`.
    pub fn project(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::Project,
            id: id.into(),
        }
    }

    /// The memories of agent `id`.
    pub fn agent(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::Agent,
            id: id.into(),
        }
    }
}

impl std::fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

impl std::str::FromStr for MemoryScope {
    type Err = StorageError;

    /// Reads `kind:id` (`user:ada`, `project:p1`, `agent:reviewer`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            StorageError::Invalid(format!(
                "memory scope {s:?}: expected user:ID, project:ID or agent:ID"
            ))
        };
        let (kind, id) = s.split_once(':').ok_or_else(invalid)?;
        let kind = MemoryScopeKind::parse(kind).ok_or_else(invalid)?;
        if id.is_empty() {
            return Err(invalid());
        }
        Ok(Self {
            kind,
            id: id.to_owned(),
        })
    }
}

/// One memory: a text kept under a path of its scope (the memory tool's
/// files map to memories one to one), with where and when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Id.
    pub id: String,
    /// Whose memory it is.
    pub scope: MemoryScope,
    /// Its normalised path (`/memories/...`), unique within the scope.
    pub path: String,
    /// What is remembered.
    pub text: String,
    /// The run that last wrote it, if a run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run: Option<String>,
    /// The step (tool call) of that run that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_step: Option<String>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last write time (Unix ms).
    pub updated_at: i64,
    /// When it is forgotten (Unix ms); never when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl MemoryRecord {
    /// Whether it is still remembered at `now`.
    pub fn live_at(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}
