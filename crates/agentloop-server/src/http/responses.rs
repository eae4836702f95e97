//! The answers of the API, one type each (the records' shapes shared with
//! notifications are in [`crate::shapes`]). Field names are the wire's:
//! seed 004's snake_case (`agent_type`, `workflow_complete`).

use agentloop_storage::model::{
    AgentRun, AgentRunDecision, AuditEntry, ChainEnd, MemoryRecord, Project, Task, WebhookAttempt,
    WebhookDelivery,
};
use agentloop_types::{PendingCall, TokenTotals};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::config::task_doc_path;
use crate::ids::rfc3339;
use crate::runner::project_repo;
use crate::shapes::{AgentRunShape, PendingShape};
use crate::state::AppState;
use crate::users::User;
use crate::webhooks::registry::Registration;

/// `GET /api/health`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Health {
    /// Whether the instance serves.
    pub ok: bool,
    /// `ok`, or `starting`.
    pub status: &'static str,
    /// What a starting instance waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
}

/// A user.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "User")]
pub struct UserShape {
    /// The user's id.
    pub id: String,
    /// The user's name.
    pub name: String,
    /// When the user was made (Unix ms).
    pub created_at: i64,
}

impl From<&User> for UserShape {
    fn from(user: &User) -> Self {
        Self {
            id: user.id.clone(),
            name: user.name.clone(),
            created_at: user.created_at,
        }
    }
}

/// A browser session: who is signed in, and the CSRF token its changes
/// carry in `x-csrf-token`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Session")]
pub struct SessionShape {
    /// The user signed in.
    pub user: UserShape,
    /// The CSRF token.
    pub csrf: String,
}

/// A project as the API shows it: `approvals` is the approval policy its
/// runs follow (see [`crate::policy`]), `approvals_source` whether the
/// project sets it or follows the server; `tool_approvals` its per-tool
/// approval policies; `shell` whether its runs get the sandboxed `shell`
/// tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Project")]
pub struct ProjectShape {
    /// The project's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its folder.
    pub repo_folder: Option<String>,
    /// The model its runs use (null: the server's).
    pub model: Option<Value>,
    /// The approval policy its runs follow: `ask` or `unattended`.
    pub approvals: &'static str,
    /// `project` (it sets the policy) or `server` (it follows the server's).
    pub approvals_source: &'static str,
    /// Its per-tool approval policies.
    pub tool_approvals: Value,
    /// Whether its runs get the sandboxed `shell` tool.
    pub shell: bool,
    /// Its own bounds on what one `shell` command may write.
    pub shell_quota: Option<Value>,
    /// Its agents and their handoffs.
    pub agents: Value,
    /// The bounds its tasks' chains of agent runs end at: its own
    /// `chain_limits` over the server's.
    pub chain_limits: ChainLimitsShape,
    /// What a run still going does with a message that names no strategy:
    /// `enqueue` (the default), `interrupt`, `rollback` or `reject`.
    pub steer_strategy: &'static str,
    /// Whether its completed runs end with the memory extraction step.
    pub memory_extraction: bool,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// The caller's role in it.
    pub role: super::member_shapes::RoleName,
}

impl ProjectShape {
    /// The shape of `project` on this server, for a caller of `role`.
    pub fn of(state: &AppState, project: &Project, role: agentloop_storage::ProjectRole) -> Self {
        let (mode, source) = crate::policy::effective(&state.config, project);
        let setting = |key: &str| project.settings.get(key).cloned();
        Self {
            id: project.id.clone(),
            name: project.name.clone(),
            repo_folder: project_repo(project).map(|p| p.to_string_lossy().into_owned()),
            model: setting("model"),
            approvals: mode.as_str(),
            approvals_source: source.as_str(),
            tool_approvals: setting("approvals").unwrap_or_else(empty_object),
            shell: crate::run_tools::shell_enabled(project),
            shell_quota: setting("shell_quota"),
            agents: setting("agents").unwrap_or_else(empty_object),
            chain_limits: ChainLimitsShape::of(&crate::chain_bounds::limits(
                &state.config,
                project,
            )),
            steer_strategy: crate::steer::project_strategy(project).as_str(),
            memory_extraction: crate::run_memory::extraction_enabled(project),
            created_at: rfc3339(project.created_at),
            updated_at: rfc3339(project.updated_at),
            role: role.into(),
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A task: `document_path` is its document in the project folder.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Task")]
pub struct TaskShape {
    /// The task's id.
    pub id: String,
    /// Its project.
    pub project_id: String,
    /// Its title.
    pub title: String,
    /// Whether it is done (Mark Done): its loop stops.
    pub workflow_complete: bool,
    /// Where its chain of agent runs stands: `complete` (its workflow is
    /// complete), `stopped` (a bound ended it: `chain_end` says which), or
    /// `open` (it goes on, or ended on a failure or a cancel).
    pub chain_status: ChainStatus,
    /// Why a bound ended its current chain; null unless `chain_status` is
    /// `stopped`.
    pub chain_end: Option<ChainEndShape>,
    /// Its document, relative to the project folder.
    pub document_path: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
}

impl From<&Task> for TaskShape {
    fn from(task: &Task) -> Self {
        Self {
            id: task.id.clone(),
            project_id: task.project_id.clone(),
            title: task.title.clone(),
            workflow_complete: task.workflow_complete,
            chain_status: if task.workflow_complete {
                ChainStatus::Complete
            } else if task.chain.end.is_some() {
                ChainStatus::Stopped
            } else {
                ChainStatus::Open
            },
            chain_end: task.chain.end.as_ref().map(ChainEndShape::of),
            document_path: task_doc_path(&task.id),
            created_at: rfc3339(task.created_at),
            updated_at: rfc3339(task.updated_at),
        }
    }
}

/// `GET /api/audit`: entries of the audit log, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AuditShape {
    /// The entries.
    pub entries: Vec<AuditEntryShape>,
}

/// One entry of the audit log: who did what, when, from where.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "AuditEntry")]
pub struct AuditEntryShape {
    /// The entry's id.
    pub id: String,
    /// When (RFC 3339).
    pub at: String,
    /// When (Unix milliseconds, as `since` and `until` take it).
    pub at_ms: i64,
    /// Who acted; null for the operator at the server's terminal
    /// (`agentloop users`).
    pub user_id: Option<String>,
    /// What was done: `session.sign_in`, `run.cancel`, `task.mark_done`,
    /// `webhooks.change`, `token.reset`, …
    pub action: String,
    /// The project it concerns.
    pub project_id: Option<String>,
    /// What it was done to (a run, task, project, memory or user id).
    pub target: Option<String>,
    /// The client's address, for an action over HTTP.
    pub address: Option<String>,
    /// More about it (never a secret).
    pub detail: Value,
}

impl From<&AuditEntry> for AuditEntryShape {
    fn from(entry: &AuditEntry) -> Self {
        Self {
            id: entry.id.clone(),
            at: rfc3339(entry.at),
            at_ms: entry.at,
            user_id: entry.user_id.clone(),
            action: entry.action.clone(),
            project_id: entry.project_id.clone(),
            target: entry.target.clone(),
            address: entry.address.clone(),
            detail: entry.detail.clone(),
        }
    }
}

/// The bounds a project's chains of agent runs end at.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "ProjectChainLimits")]
pub struct ChainLimitsShape {
    /// Most agent runs in one chain.
    pub max_runs: u64,
    /// Most tokens one chain may spend (null: no bound).
    pub max_tokens: Option<u64>,
    /// Most US dollars one chain may cost (null: no bound).
    pub max_cost_usd: Option<f64>,
}

impl ChainLimitsShape {
    /// The shape of `limits`.
    pub fn of(limits: &crate::chain_bounds::ChainLimits) -> Self {
        Self {
            max_runs: limits.max_runs,
            max_tokens: limits.max_tokens,
            max_cost_usd: limits.max_cost,
        }
    }
}

/// Where a task's chain of agent runs stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainStatus {
    /// It goes on, or ended on a failed or cancelled run.
    Open,
    /// One of its bounds ended it (`max_runs`, `max_tokens`, `max_cost`).
    Stopped,
    /// Its workflow is complete.
    Complete,
}

/// Why a bound ended a chain of agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "ChainEnd")]
pub struct ChainEndShape {
    /// The bound: `max_runs`, `max_tokens` or `max_cost`.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
    /// The agent run after which the chain ended.
    pub agent_run_id: String,
    /// Agent runs in the chain.
    pub runs: u64,
    /// Tokens its runs spent.
    pub tokens: u64,
    /// What its runs cost, in US dollars.
    pub cost_usd: f64,
    /// When it ended (RFC 3339).
    pub at: String,
}

impl ChainEndShape {
    /// The shape of `end`.
    pub fn of(end: &ChainEnd) -> Self {
        Self {
            reason: end.reason.clone(),
            message: end.message.clone(),
            agent_run_id: end.agent_run_id.clone(),
            runs: end.runs,
            tokens: end.tokens,
            cost_usd: end.cost_micro_usd as f64 / 1_000_000.0,
            at: rfc3339(end.at),
        }
    }
}

/// A task's document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Document")]
pub struct DocumentShape {
    /// Its path, relative to the project folder.
    pub path: String,
    /// Its content.
    pub content: String,
}

/// The answer to Mark Done (seed 004's).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkflowCompleted {
    /// Always `true`.
    pub success: bool,
    /// The task's flag now.
    pub workflow_complete: bool,
}

/// An agent run with its token totals and, while it waits, what it waits
/// for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "AgentRunWithDetails")]
pub struct AgentRunView {
    /// The run.
    #[serde(flatten)]
    pub run: AgentRunShape,
    /// Token totals of its conversation (null before it has one).
    #[schemars(with = "Option<TokensSchema>")]
    pub tokens: Option<TokenTotals>,
    /// What it waits for (only while it is `waiting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<PendingShape>>,
    /// Why its task's chain ended after it, when a bound ended it there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_end: Option<ChainEndShape>,
}

impl AgentRunView {
    /// The view of `run` with its details.
    pub fn of(
        run: &AgentRun,
        tokens: Option<TokenTotals>,
        pending: Option<&[(PendingCall, Option<AgentRunDecision>)]>,
    ) -> Self {
        Self {
            run: AgentRunShape::of(run),
            tokens,
            pending: pending.map(pending_shapes),
            chain_end: None,
        }
    }

    /// The view with the end of `task`'s chain, if a bound ended it after
    /// this run.
    pub fn in_task(mut self, task: &Task) -> Self {
        self.chain_end = task
            .chain
            .end
            .as_ref()
            .filter(|end| end.agent_run_id == self.run.id)
            .map(ChainEndShape::of);
        self
    }
}

/// Token totals.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct TokensSchema {
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
    cache_creation_tokens: u64,
    cache_read_tokens: u64,
}

/// The shapes of pending calls.
pub fn pending_shapes(pending: &[(PendingCall, Option<AgentRunDecision>)]) -> Vec<PendingShape> {
    pending
        .iter()
        .map(|(item, decided)| PendingShape::of(item, decided.as_ref()))
        .collect()
}

/// `GET /api/agent-runs/{runId}/pending`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PendingAnswer {
    /// The run.
    pub agent_run: AgentRunShape,
    /// What it waits for (empty unless it is waiting).
    pub pending: Vec<PendingShape>,
}

/// `POST /api/agent-runs/{runId}/decisions`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecisionsAnswer {
    /// The run now.
    pub agent_run: AgentRunShape,
    /// What it still waits for.
    pub pending: Vec<PendingShape>,
    /// Whether every call is decided and the run resumed.
    pub resumed: bool,
}

/// `POST /api/tasks/{taskId}/inputs` and `POST /api/agent-runs/{runId}/inputs`:
/// what a submitted input did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct InputAnswer {
    /// `started` (a new agent run), `queued` (a message kept for the run
    /// going on, which takes it at its next step), `interrupted` (the
    /// run's step was cancelled; a run going on with the message
    /// follows), `decided`, `cancelled` or `stopped` (the task was marked
    /// done).
    pub submitted: &'static str,
    /// The agent run the input started, decided on or cancelled, as it is
    /// now (absent for `stopped`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_run: Option<AgentRunShape>,
    /// For `decided`: whether every call is decided and the run resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<bool>,
}

/// A project's webhooks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Webhooks")]
pub struct WebhooksShape {
    /// The URLs delivered to.
    pub urls: Vec<String>,
    /// The events they hear.
    pub events: Vec<String>,
    /// The signing secret (HMAC-SHA256 of each delivery).
    pub secret: String,
}

impl From<&Registration> for WebhooksShape {
    fn from(registration: &Registration) -> Self {
        Self {
            urls: registration.urls.clone(),
            events: registration.events.clone(),
            secret: registration.secret.clone(),
        }
    }
}

/// One webhook delivery.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "WebhookDelivery")]
pub struct DeliveryShape {
    /// The delivery's id.
    pub id: String,
    /// The event delivered.
    pub event: String,
    /// Where to.
    pub url: String,
    /// `pending`, `delivered` or `failed`.
    pub state: &'static str,
    /// Its attempts, oldest first.
    pub attempts: Vec<AttemptShape>,
}

impl From<&WebhookDelivery> for DeliveryShape {
    fn from(d: &WebhookDelivery) -> Self {
        Self {
            id: d.id.clone(),
            event: d.event.clone(),
            url: d.url.clone(),
            state: d.state.as_str(),
            attempts: d.attempts.iter().map(AttemptShape::from).collect(),
        }
    }
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "WebhookAttempt")]
pub struct AttemptShape {
    /// When it started (RFC 3339).
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed (no answer in time, a refused address, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<&WebhookAttempt> for AttemptShape {
    fn from(a: &WebhookAttempt) -> Self {
        Self {
            at: a.at.clone(),
            status: a.status,
            error: a.error.clone(),
        }
    }
}

/// A project's delivery log.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "WebhookDeliveries")]
pub struct DeliveriesShape {
    /// The deliveries, oldest first.
    pub deliveries: Vec<DeliveryShape>,
}

/// One memory of a project.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Memory")]
pub struct MemoryShape {
    /// The memory's id.
    pub id: String,
    /// Its path in the memory tool's files (`/memories/...`).
    pub path: String,
    /// What is remembered.
    pub text: String,
    /// The agent run that last wrote it, if one did.
    pub source_run: Option<String>,
    /// The tool call of that run that wrote it.
    pub source_step: Option<String>,
    /// Where that run is read (`/api/agent-runs/{runId}`).
    pub source_link: Option<String>,
    /// When it was first written (RFC 3339).
    pub created_at: String,
    /// When it was last written (RFC 3339).
    pub updated_at: String,
    /// When it is forgotten, Unix milliseconds (none: never).
    pub expires_at: Option<i64>,
}

impl From<&MemoryRecord> for MemoryShape {
    fn from(m: &MemoryRecord) -> Self {
        Self {
            id: m.id.clone(),
            path: m.path.clone(),
            text: m.text.clone(),
            source_run: m.source_run.clone(),
            source_step: m.source_step.clone(),
            source_link: m
                .source_run
                .as_ref()
                .map(|run| format!("/api/agent-runs/{run}")),
            created_at: rfc3339(m.created_at),
            updated_at: rfc3339(m.updated_at),
            expires_at: m.expires_at,
        }
    }
}

/// A project's memories.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Memories")]
pub struct MemoriesShape {
    /// The memories, by path.
    pub memories: Vec<MemoryShape>,
}

/// The 409 of a run that could not start (seed 004's).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StartConflict {
    /// Why.
    pub error: String,
    /// The task's active run, if one is.
    #[serde(rename = "runningAgent")]
    pub running_agent: Option<AgentRunShape>,
}

/// The 409 of a run that is not in the state a change needs (it has
/// ended; it does not wait).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunConflict {
    /// Why.
    pub error: String,
    /// The run as it is.
    #[serde(rename = "agentRun")]
    pub agent_run: Option<AgentRunShape>,
}

/// An error answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorShape {
    /// What went wrong, for people.
    pub error: String,
}
