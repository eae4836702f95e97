//! JSON shapes of the records, shared by API answers and owner
//! notifications: an agent run, a pending call and a decision. Each is a
//! type, so the API's document takes its schema from it.

use agentloop_storage::model::{AgentRun, AgentRunDecision, AgentRunStatus, AgentType};
use agentloop_types::{Decision, PendingCall, Wait};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::ids::rfc3339;

/// An agent run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Its loop runs.
    Running,
    /// It waits for a person's decisions.
    Waiting,
    /// Its loop completed, or Mark Done force-completed it.
    Completed,
    /// It failed (`error` says why).
    Failed,
    /// A person cancelled it.
    Cancelled,
}

impl From<AgentRunStatus> for RunStatus {
    fn from(status: AgentRunStatus) -> Self {
        match status {
            AgentRunStatus::Running => Self::Running,
            AgentRunStatus::Waiting => Self::Waiting,
            AgentRunStatus::Completed => Self::Completed,
            AgentRunStatus::Failed => Self::Failed,
            AgentRunStatus::Cancelled => Self::Cancelled,
        }
    }
}

/// One of the server's agents, as a run names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Plans with a person.
    Planification,
    /// Implements.
    Implementation,
    /// Reviews.
    Review,
}

impl From<AgentType> for AgentKind {
    fn from(agent: AgentType) -> Self {
        match agent {
            AgentType::Planification => Self::Planification,
            AgentType::Implementation => Self::Implementation,
            AgentType::Review => Self::Review,
        }
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunError {
    /// The kind of error (`provider`, `tool`, ...).
    pub kind: String,
    /// A sentence for people.
    pub message: String,
}

/// An agent run as the API shows it: seed 004's shape, plus why it ended
/// when its loop did not end it: `error` (`{kind, message}`) for a failed
/// run, `stopped_by` with `stop_message` for one a person stopped: `cancel`
/// (it is `cancelled`) or `workflow_complete` (Mark Done: it is
/// `completed`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "AgentRun")]
pub struct AgentRunShape {
    /// The run's id.
    pub id: String,
    /// Its task.
    pub task_id: String,
    /// Its agent.
    pub agent_type: AgentKind,
    /// Its status.
    pub status: RunStatus,
    /// Its conversation, once it has one.
    pub conversation_id: Option<String>,
    /// When it started (RFC 3339).
    pub created_at: String,
    /// When it ended (RFC 3339).
    pub completed_at: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<RunError>,
    /// Who stopped it: `cancel` or `workflow_complete`.
    pub stopped_by: Option<String>,
    /// What the stop said.
    pub stop_message: Option<String>,
}

impl AgentRunShape {
    /// The shape of `run`.
    pub fn of(run: &AgentRun) -> Self {
        let reason = run.end_reason.as_ref();
        let failed = (run.status == AgentRunStatus::Failed)
            .then_some(reason)
            .flatten();
        // Cancelled by a person, or force-completed by Mark Done.
        let stopped = matches!(
            run.status,
            AgentRunStatus::Cancelled | AgentRunStatus::Completed
        )
        .then_some(reason)
        .flatten();
        Self {
            id: run.id.clone(),
            task_id: run.task_id.clone(),
            agent_type: run.agent_type.into(),
            status: run.status.into(),
            conversation_id: run.conversation_id.clone(),
            created_at: rfc3339(run.created_at),
            completed_at: run.completed_at.map(rfc3339),
            error: failed.map(|r| RunError {
                kind: r.kind.clone(),
                message: r.message.clone(),
            }),
            stopped_by: stopped.map(|r| r.kind.clone()),
            stop_message: stopped.map(|r| r.message.clone()),
        }
    }
}

/// [`AgentRunShape`] as JSON.
pub fn agent_run_json(run: &AgentRun) -> Value {
    to_json(&AgentRunShape::of(run))
}

/// What a pending call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PendingKind {
    /// A person's approval of the call.
    Approval,
    /// A person's answer to a question.
    Question,
}

/// A pending call as the API shows it: `call_id`, `tool`, `arguments`,
/// `kind` (`approval` or `question`), `reason` or `question`, `path` (the
/// tool-call ids leading to the nested run that made it; empty for the
/// run itself) and `decision` (the one recorded, or null).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "PendingCall")]
pub struct PendingShape {
    /// The call's id.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The call's arguments, as the model made them.
    #[schemars(with = "Value")]
    pub arguments: agentloop_types::ToolInput,
    /// The tool-call ids leading to the nested run that made it.
    pub path: Vec<String>,
    /// The decision recorded on it, if any.
    pub decision: Option<DecisionShape>,
    /// What it waits for.
    pub kind: PendingKind,
    /// `approval`: why the policy asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `question`: the question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

impl PendingShape {
    /// The shape of a pending call and its recorded decision.
    pub fn of(item: &PendingCall, decided: Option<&AgentRunDecision>) -> Self {
        let (kind, reason, question) = match &item.wait {
            Wait::Approval { reason } => (PendingKind::Approval, Some(reason.clone()), None),
            Wait::Question { question } => (PendingKind::Question, None, Some(question.clone())),
        };
        Self {
            call_id: item.call.id.clone(),
            tool: item.call.name.clone(),
            arguments: item.call.input.clone(),
            path: item.path.0.clone(),
            decision: decided.map(|d| DecisionShape::of(&d.decision)),
            kind,
            reason,
            question,
        }
    }
}

/// [`PendingShape`] as JSON.
pub fn pending_json(item: &PendingCall, decided: Option<&AgentRunDecision>) -> Value {
    to_json(&PendingShape::of(item, decided))
}

/// A decision as the API shows it (the shape it is sent in, without
/// `call_id`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "Decision")]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum DecisionShape {
    /// Approved, with the edited arguments if any.
    Approve {
        /// The edited arguments.
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
    /// Approved, with every later call of the tool in the run.
    ApproveAlways,
    /// Rejected.
    Reject {
        /// Why.
        reason: String,
    },
    /// A question answered.
    Answer {
        /// The answer.
        text: String,
    },
}

impl DecisionShape {
    /// The shape of `decision`.
    pub fn of(decision: &Decision) -> Self {
        match decision {
            Decision::Approve { arguments } => Self::Approve {
                arguments: arguments.clone(),
            },
            Decision::ApproveAlways => Self::ApproveAlways,
            Decision::Reject { reason } => Self::Reject {
                reason: reason.clone(),
            },
            Decision::Answer { text } => Self::Answer { text: text.clone() },
        }
    }
}

/// A shape as JSON. The shapes hold strings, numbers and JSON values
/// only, which always serialize; an impossible failure is an empty object
/// rather than a panic.
pub fn to_json<T: Serialize>(shape: &T) -> Value {
    serde_json::to_value(shape).unwrap_or_else(|_| Value::Object(Map::new()))
}
