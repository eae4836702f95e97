//! A2A 1.0's objects as they go over the JSON-RPC binding: the protobuf
//! JSON mapping, so fields are camelCase, enums are their value names
//! (`TASK_STATE_COMPLETED`), and a field at its default is left out (an
//! A2A client reads a missing field as its default; several refuse
//! `null`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this crate speaks, as agent cards and the
/// `A2A-Version` header name it.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The header a client names its protocol version in.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Where a server publishes its agent card.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The protocol binding of JSON-RPC over HTTP, as cards name it.
pub const JSONRPC_BINDING: &str = "JSONRPC";

fn is_false(value: &bool) -> bool {
    !*value
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    /// Not set (a malformed object).
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Accepted, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Done; its artifacts hold the answer.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended by an error.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waits for the client's next message.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Refused by the agent.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waits for the client to authenticate.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Whether nothing more happens to a task in this state.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Whether a stream of the task ends at this state: terminal, or
    /// waiting for the client.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Not set.
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One piece of a message or an artifact: text, structured data, a URL or
/// bytes (base64), with optional metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured data (any JSON value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The content's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A JSON data part.
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            media_type: Some("application/json".to_owned()),
            ..Self::default()
        }
    }
}

/// A message of the client or the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for it.
    #[serde(default)]
    pub message_id: String,
    /// The context it belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The task it belongs to (empty: a new task).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// Who sent it.
    #[serde(default = "unspecified_role")]
    pub role: Role,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extensions it uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Tasks it refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// An agent message of one task, made of `parts`.
    pub fn agent(message_id: String, task_id: &str, context_id: &str, parts: Vec<Part>) -> Self {
        Self {
            message_id,
            context_id: context_id.to_owned(),
            task_id: task_id.to_owned(),
            role: Role::Agent,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// Its text parts, joined by newlines (`None` when it has none).
    pub fn text(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }
}

/// A task's status: its state, the agent's message about it, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says about it (why it failed, what it waits for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When it was set (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Something a task produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id, unique within the task.
    pub artifact_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A unit of work of an agent, with its status and artifacts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id.
    pub id: String,
    /// The context it belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What it produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Its messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task's status changed (in a stream).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task produced an artifact or a piece of one (in a stream).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The artifact (or the piece).
    pub artifact: Artifact,
    /// Whether it adds to an artifact of the same id sent before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// Whether it is the artifact's last piece.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One item of a stream (and of a sent message's answer): exactly one of
/// its fields is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task, whole.
    Task(Task),
    /// A message, not part of a task.
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The state it leaves its task in, when it says.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Task(task) => Some(task.status.state),
            Self::StatusUpdate(update) => Some(update.status.state),
            Self::Message(_) | Self::ArtifactUpdate(_) => None,
        }
    }
}

/// How a sent message is to be handled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Output media types the client accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// How many history messages to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Answer at once instead of when the task ends or waits.
    #[serde(default, skip_serializing_if = "is_false")]
    pub return_immediately: bool,
    /// Push notifications (not supported here; read to refuse them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<Value>,
}

/// `SendMessage` and `SendStreamingMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant (for a server that hosts several).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The message.
    pub message: Message,
    /// How to handle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `SendMessage`'s result: a task, or a message outside any task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message started or continued.
    Task(Task),
    /// A direct answer.
    Message(Message),
}

/// `GetTask`, `CancelTask` and `SubscribeToTask` params: a task by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task's id.
    pub id: String,
    /// How many history messages to return (`GetTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Metadata (`CancelTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `ListTasks` params: which of the caller's tasks, a page at a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant: only its tasks.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// Only the tasks of this context.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// Only the tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// At most this many tasks (the server's default when absent or 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i64>,
    /// Where the page starts: the previous answer's `nextPageToken`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub page_token: String,
    /// How many history messages each task carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Only tasks whose status changed after this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Whether the tasks carry their artifacts.
    #[serde(default, skip_serializing_if = "is_false")]
    pub include_artifacts: bool,
}

/// `ListTasks` answer: one page of tasks, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page's tasks.
    pub tasks: Vec<Task>,
    /// Where the next page starts; empty on the last page.
    pub next_page_token: String,
    /// The page size used.
    pub page_size: i64,
    /// How many tasks match, over all pages.
    pub total_size: i64,
}

/// Where and how an agent is reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint's URL.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// The tenant requests name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The protocol version (`1.0`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub protocol_version: String,
}

/// What an agent can do beyond the basics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// An extended card for authenticated clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// One thing the agent is good at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// An agent's self-description, served at [`AGENT_CARD_PATH`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Where it is reached, preferred first.
    pub supported_interfaces: Vec<AgentInterface>,
    /// Its version.
    pub version: String,
    /// What it can do.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// How clients authenticate, by scheme name (protobuf JSON of
    /// `SecurityScheme`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub security_schemes: Map<String, Value>,
    /// Which schemes a request needs (protobuf JSON of
    /// `SecurityRequirement`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
    /// Media types it reads.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Media types it writes.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// Its skills.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
}

impl AgentCard {
    /// The first JSON-RPC interface it offers in protocol 1 (or in a
    /// version it does not name).
    pub fn jsonrpc_interface(&self) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|i| {
            let major = i.protocol_version.split('.').next().unwrap_or_default();
            i.protocol_binding == JSONRPC_BINDING && (major.is_empty() || major == "1")
        })
    }
}
