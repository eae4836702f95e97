//! A2A 0.3's JSON-RPC dialect, translated at the edge: its requests read
//! as 1.0 requests ([`to_v1_method`], [`send_params`], [`task_id_params`])
//! and 1.0 answers written back in its shapes ([`task`], [`stream_item`],
//! [`error`]), so one server handles both.
//!
//! 0.3 differs from 1.0 on the wire in: method names (`message/send`),
//! objects tagged by `kind` (`task`, `message`, `status-update`,
//! `artifact-update`), parts tagged by `kind` (`text`, `data`, `file`),
//! lower-case states (`input-required`), roles (`user`, `agent`), a
//! status update's `final`, a send's `blocking` (1.0's
//! `returnImmediately`, inverted) and no tenant (named here by
//! `metadata.tenant`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::rpc::{ErrorCode, RpcError};
use crate::wire::{
    Artifact, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse,
    Task, TaskIdRequest, TaskState, TaskStatus,
};

/// The protocol version of this dialect, as cards and the `A2A-Version`
/// header name it.
pub const PROTOCOL_VERSION: &str = "0.3";

/// The methods of A2A 0.3's JSON-RPC binding.
pub mod method {
    /// `SendMessage`.
    pub const SEND: &str = "message/send";
    /// `SendStreamingMessage`.
    pub const STREAM: &str = "message/stream";
    /// `GetTask`.
    pub const GET: &str = "tasks/get";
    /// `CancelTask`.
    pub const CANCEL: &str = "tasks/cancel";
    /// `SubscribeToTask`.
    pub const RESUBSCRIBE: &str = "tasks/resubscribe";
    /// `GetExtendedAgentCard`.
    pub const EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";
    /// The push notification methods.
    pub const PUSH_CONFIG: &[&str] = &[
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ];
}

/// The 1.0 method a 0.3 method is, or `None` when the name is not 0.3's.
pub fn to_v1_method(name: &str) -> Option<&'static str> {
    use crate::rpc::method as v1;
    Some(match name {
        method::SEND => v1::SEND_MESSAGE,
        method::STREAM => v1::SEND_STREAMING_MESSAGE,
        method::GET => v1::GET_TASK,
        method::CANCEL => v1::CANCEL_TASK,
        method::RESUBSCRIBE => v1::SUBSCRIBE_TO_TASK,
        method::EXTENDED_CARD => v1::GET_EXTENDED_AGENT_CARD,
        "tasks/pushNotificationConfig/set" => v1::PUSH_CONFIG[0],
        "tasks/pushNotificationConfig/get" => v1::PUSH_CONFIG[1],
        "tasks/pushNotificationConfig/list" => v1::PUSH_CONFIG[2],
        "tasks/pushNotificationConfig/delete" => v1::PUSH_CONFIG[3],
        _ => return None,
    })
}

/// A 0.3 part: text, structured data (an object) or a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum V03Part {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    /// Structured data.
    Data {
        /// The data (0.3 allows only objects).
        data: Map<String, Value>,
        /// Metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    /// A file, by URI or inline bytes.
    File {
        /// The file.
        file: V03File,
        /// Metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
}

/// A 0.3 file part's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct V03File {
    /// Its content, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The metadata key marking a data part whose 1.0 value was not an object
/// (0.3 wraps it as `{"value": ...}`).
const WRAPPED_DATA: &str = "data_part_compat";

impl From<V03Part> for Part {
    fn from(part: V03Part) -> Self {
        match part {
            V03Part::Text { text, metadata } => Part {
                metadata,
                ..Part::text(text)
            },
            V03Part::Data { mut data, metadata } => {
                let mut metadata = metadata.unwrap_or_default();
                let wrapped = metadata.remove(WRAPPED_DATA) == Some(Value::Bool(true));
                let value = match data.remove("value") {
                    Some(value) if wrapped => value,
                    Some(value) => {
                        data.insert("value".to_owned(), value);
                        Value::Object(data)
                    }
                    None => Value::Object(data),
                };
                Part {
                    metadata: (!metadata.is_empty()).then_some(metadata),
                    ..Part::data(value)
                }
            }
            V03Part::File { file, metadata } => Part {
                raw: file.bytes,
                url: file.uri,
                media_type: file.mime_type,
                filename: file.name,
                metadata,
                ..Part::default()
            },
        }
    }
}

impl From<&Part> for V03Part {
    fn from(part: &Part) -> Self {
        let metadata = part.metadata.clone();
        if let Some(data) = &part.data {
            return match data {
                Value::Object(object) => V03Part::Data {
                    data: object.clone(),
                    metadata,
                },
                other => {
                    let mut metadata = metadata.unwrap_or_default();
                    metadata.insert(WRAPPED_DATA.to_owned(), Value::Bool(true));
                    V03Part::Data {
                        data: Map::from_iter([("value".to_owned(), other.clone())]),
                        metadata: Some(metadata),
                    }
                }
            };
        }
        if part.raw.is_some() || part.url.is_some() {
            return V03Part::File {
                file: V03File {
                    bytes: part.raw.clone(),
                    uri: part.url.clone(),
                    mime_type: part.media_type.clone(),
                    name: part.filename.clone(),
                },
                metadata,
            };
        }
        V03Part::Text {
            text: part.text.clone().unwrap_or_default(),
            metadata,
        }
    }
}

/// A 0.3 message (`kind: "message"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct V03Message {
    /// Always `message`.
    #[serde(default = "message_kind")]
    pub kind: String,
    /// The sender's id for it.
    pub message_id: String,
    /// `user` or `agent`.
    pub role: String,
    /// Its content.
    pub parts: Vec<V03Part>,
    /// Its context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Its task (absent: a new task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Tasks it refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_task_ids: Option<Vec<String>>,
    /// Extensions it uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

fn message_kind() -> String {
    "message".to_owned()
}

impl From<V03Message> for Message {
    fn from(message: V03Message) -> Self {
        Message {
            message_id: message.message_id,
            context_id: message.context_id.unwrap_or_default(),
            task_id: message.task_id.unwrap_or_default(),
            role: match message.role.as_str() {
                "user" => Role::User,
                "agent" => Role::Agent,
                _ => Role::Unspecified,
            },
            parts: message.parts.into_iter().map(Part::from).collect(),
            metadata: message.metadata,
            extensions: message.extensions.unwrap_or_default(),
            reference_task_ids: message.reference_task_ids.unwrap_or_default(),
        }
    }
}

impl From<&Message> for V03Message {
    fn from(message: &Message) -> Self {
        let some = |s: &String| (!s.is_empty()).then(|| s.clone());
        V03Message {
            kind: message_kind(),
            message_id: message.message_id.clone(),
            role: if message.role == Role::User {
                "user"
            } else {
                "agent"
            }
            .to_owned(),
            parts: message.parts.iter().map(V03Part::from).collect(),
            context_id: some(&message.context_id),
            task_id: some(&message.task_id),
            reference_task_ids: (!message.reference_task_ids.is_empty())
                .then(|| message.reference_task_ids.clone()),
            extensions: (!message.extensions.is_empty()).then(|| message.extensions.clone()),
            metadata: message.metadata.clone(),
        }
    }
}

/// `message/send` and `message/stream` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSendParams {
    message: V03Message,
    #[serde(default)]
    configuration: Option<MessageSendConfiguration>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSendConfiguration {
    #[serde(default)]
    accepted_output_modes: Option<Vec<String>>,
    #[serde(default)]
    blocking: Option<bool>,
    #[serde(default)]
    history_length: Option<i64>,
    #[serde(default)]
    push_notification_config: Option<Value>,
}

/// `tasks/get`, `tasks/cancel` and `tasks/resubscribe` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    id: String,
    #[serde(default)]
    history_length: Option<i64>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

fn invalid(method: &str, err: &serde_json::Error) -> RpcError {
    RpcError::invalid_params(format!("{method} params: {err}"))
}

/// A `message/send` or `message/stream` request's params as 1.0's: the
/// tenant (0.3 has none) is `metadata.tenant` of the message, else of the
/// request.
pub fn send_params(method: &str, params: Value) -> Result<SendMessageRequest, RpcError> {
    let params: MessageSendParams =
        serde_json::from_value(params).map_err(|e| invalid(method, &e))?;
    let tenant = [params.message.metadata.as_ref(), params.metadata.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|m| m.get("tenant").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let configuration = params.configuration.map(|c| SendMessageConfiguration {
        accepted_output_modes: c.accepted_output_modes.unwrap_or_default(),
        // 0.3 reads 0 as "all".
        history_length: c.history_length.filter(|n| *n != 0),
        return_immediately: c.blocking == Some(false),
        task_push_notification_config: c.push_notification_config,
    });
    Ok(SendMessageRequest {
        tenant,
        message: params.message.into(),
        configuration,
        metadata: params.metadata,
    })
}

/// A `tasks/*` request's params as 1.0's.
pub fn task_id_params(method: &str, params: Value) -> Result<TaskIdRequest, RpcError> {
    let params: TaskParams = serde_json::from_value(params).map_err(|e| invalid(method, &e))?;
    Ok(TaskIdRequest {
        tenant: String::new(),
        id: params.id,
        history_length: params.history_length,
        metadata: params.metadata,
    })
}

/// A state's 0.3 name.
pub fn state(state: TaskState) -> &'static str {
    match state {
        TaskState::Unspecified => "unknown",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
    }
}

fn status(status: &TaskStatus) -> Value {
    let mut value = json!({ "state": state(status.state) });
    if let Some(message) = &status.message {
        value["message"] = json!(V03Message::from(message));
    }
    if let Some(timestamp) = &status.timestamp {
        value["timestamp"] = json!(timestamp);
    }
    value
}

fn artifact(artifact: &Artifact) -> Value {
    let mut value = json!({
        "artifactId": artifact.artifact_id,
        "parts": artifact.parts.iter().map(V03Part::from).collect::<Vec<_>>(),
    });
    for (key, text) in [
        ("name", &artifact.name),
        ("description", &artifact.description),
    ] {
        if !text.is_empty() {
            value[key] = json!(text);
        }
    }
    if let Some(metadata) = &artifact.metadata {
        value["metadata"] = json!(metadata);
    }
    value
}

/// A task in 0.3's shape (`kind: "task"`).
pub fn task(task: &Task) -> Value {
    let mut value = json!({
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id,
        "status": status(&task.status),
    });
    if !task.artifacts.is_empty() {
        value["artifacts"] = task.artifacts.iter().map(artifact).collect();
    }
    if !task.history.is_empty() {
        value["history"] = task
            .history
            .iter()
            .map(V03Message::from)
            .map(|m| json!(m))
            .collect();
    }
    if let Some(metadata) = &task.metadata {
        value["metadata"] = json!(metadata);
    }
    value
}

/// A stream item (or a send's answer) in 0.3's shape. A status update is
/// `final` when the stream ends with it: the task ended or waits for the
/// client.
pub fn stream_item(item: &StreamResponse) -> Value {
    match item {
        StreamResponse::Task(t) => task(t),
        StreamResponse::Message(message) => json!(V03Message::from(message)),
        StreamResponse::StatusUpdate(update) => {
            let mut value = json!({
                "kind": "status-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "status": status(&update.status),
                "final": update.status.state.ends_stream(),
            });
            if let Some(metadata) = &update.metadata {
                value["metadata"] = json!(metadata);
            }
            value
        }
        StreamResponse::ArtifactUpdate(update) => {
            let mut value = json!({
                "kind": "artifact-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "artifact": artifact(&update.artifact),
                "append": update.append,
                "lastChunk": update.last_chunk,
            });
            if let Some(metadata) = &update.metadata {
                value["metadata"] = json!(metadata);
            }
            value
        }
    }
}

/// An error in 0.3's codes: 1.0's codes up to -32007 are 0.3's too; the
/// two 1.0 added (extension support required, version not supported)
/// read as an invalid request.
pub fn error(error: &RpcError) -> RpcError {
    match ErrorCode::from_code(error.code) {
        Some(ErrorCode::ExtensionSupportRequired | ErrorCode::VersionNotSupported) => RpcError {
            code: ErrorCode::InvalidRequest.code(),
            message: error.message.clone(),
            data: error.data.clone(),
        },
        _ => error.clone(),
    }
}

/// Whether an `A2A-Version` header's value is this dialect.
pub fn is_version(version: &str) -> bool {
    version.split('.').next() == Some("0")
}
