//! The JSON-RPC 2.0 envelope of A2A's JSON-RPC binding: requests, answers,
//! the method names and the error codes (JSON-RPC's own and A2A's).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The methods of A2A 1.0's JSON-RPC binding that agentloop serves.
pub mod method {
    /// Send a message; the answer is the task (when it ends or waits).
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// Send a message; the answer is an SSE stream of the task's updates.
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// A task by id.
    pub const GET_TASK: &str = "GetTask";
    /// Cancel a task.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// Follow a task's updates again.
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// The caller's tasks, a page at a time.
    pub const LIST_TASKS: &str = "ListTasks";
    /// The extended card (not served: "not configured").
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";
    /// The push notification methods (not served: "not supported").
    pub const PUSH_CONFIG: &[&str] = &[
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ];
}

/// A JSON-RPC error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The body is not JSON (-32700).
    ParseError,
    /// Not a JSON-RPC 2.0 request object (-32600).
    InvalidRequest,
    /// No such method (-32601).
    MethodNotFound,
    /// The params do not fit the method (-32602).
    InvalidParams,
    /// The server failed (-32603).
    InternalError,
    /// No task of the caller has that id (-32001).
    TaskNotFound,
    /// The task has ended and cannot be cancelled (-32002).
    TaskNotCancelable,
    /// Push notifications are not supported (-32003).
    PushNotificationNotSupported,
    /// The operation is not supported (-32004).
    UnsupportedOperation,
    /// A part's content type is not supported (-32005).
    ContentTypeNotSupported,
    /// The agent answered something the method does not allow (-32006).
    InvalidAgentResponse,
    /// No extended agent card (-32007).
    ExtendedAgentCardNotConfigured,
    /// An extension the server needs was not named (-32008).
    ExtensionSupportRequired,
    /// The `A2A-Version` the client speaks is not served (-32009).
    VersionNotSupported,
}

impl ErrorCode {
    /// The number on the wire.
    pub fn code(self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ContentTypeNotSupported => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired => -32008,
            Self::VersionNotSupported => -32009,
        }
    }

    /// The code a number stands for.
    pub fn from_code(code: i64) -> Option<Self> {
        [
            Self::ParseError,
            Self::InvalidRequest,
            Self::MethodNotFound,
            Self::InvalidParams,
            Self::InternalError,
            Self::TaskNotFound,
            Self::TaskNotCancelable,
            Self::PushNotificationNotSupported,
            Self::UnsupportedOperation,
            Self::ContentTypeNotSupported,
            Self::InvalidAgentResponse,
            Self::ExtendedAgentCardNotConfigured,
            Self::ExtensionSupportRequired,
            Self::VersionNotSupported,
        ]
        .into_iter()
        .find(|c| c.code() == code)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("A2A error {code}: {message}")]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// A sentence for people.
    pub message: String,
    /// More, when there is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// "Task not found", whether the id is unknown or another user's.
    pub fn task_not_found() -> Self {
        Self::new(ErrorCode::TaskNotFound, "Task not found")
    }

    /// Invalid params, saying why.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }
}

/// A JSON-RPC request's id: a string, a number or null.
pub type RequestId = Value;

/// A request as read off the wire, checked to be JSON-RPC 2.0.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its id (null when it had none).
    pub id: RequestId,
    /// The method.
    pub method: String,
    /// Its params (an empty object when it had none).
    pub params: Value,
}

impl Request {
    /// Reads a request body. The error answers it: a parse error, or an
    /// invalid request with the id when the body had a usable one.
    pub fn parse(body: &[u8]) -> Result<Self, (RequestId, RpcError)> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            (
                Value::Null,
                RpcError::new(ErrorCode::ParseError, format!("malformed JSON: {e}")),
            )
        })?;
        let Value::Object(mut object) = value else {
            let what = if value.is_array() {
                "batch requests are not supported"
            } else {
                "a request must be a JSON object"
            };
            return Err((Value::Null, RpcError::new(ErrorCode::InvalidRequest, what)));
        };
        let id = match object.remove("id") {
            None | Some(Value::Null) => Value::Null,
            Some(id @ (Value::String(_) | Value::Number(_))) => id,
            Some(_) => {
                return Err((
                    Value::Null,
                    RpcError::new(
                        ErrorCode::InvalidRequest,
                        "id must be a string, a number or null",
                    ),
                ));
            }
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((
                id,
                RpcError::new(ErrorCode::InvalidRequest, "jsonrpc must be \"2.0\""),
            ));
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) if !method.is_empty() => method,
            _ => {
                return Err((
                    id,
                    RpcError::new(
                        ErrorCode::InvalidRequest,
                        "method must be a non-empty string",
                    ),
                ));
            }
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(params @ Value::Object(_)) => params,
            Some(_) => {
                return Err((id, RpcError::invalid_params("params must be an object")));
            }
        };
        Ok(Self { id, method, params })
    }

    /// The params as `T`, or invalid params saying why not.
    pub fn params<T: serde::de::DeserializeOwned>(&self) -> Result<T, RpcError> {
        serde_json::from_value(self.params.clone())
            .map_err(|e| RpcError::invalid_params(format!("{} params: {e}", self.method)))
    }
}

/// A successful answer to request `id`.
pub fn result(id: &RequestId, result: &impl Serialize) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// An error answer to request `id`.
pub fn error(id: &RequestId, error: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

/// A request to send (the client side).
pub fn request(id: &str, method: &str, params: &impl Serialize) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// An answer as read off the wire (the client side): its result, or the
/// error it carried.
pub fn parse_answer(answer: Value) -> Result<Value, AnswerError> {
    let Value::Object(mut object) = answer else {
        return Err(AnswerError::Malformed(
            "an answer must be a JSON object".to_owned(),
        ));
    };
    if let Some(error) = object.remove("error").filter(|e| !e.is_null()) {
        return Err(match serde_json::from_value::<RpcError>(error) {
            Ok(error) => AnswerError::Rpc(error),
            Err(e) => AnswerError::Malformed(format!("malformed error object: {e}")),
        });
    }
    object
        .remove("result")
        .ok_or_else(|| AnswerError::Malformed("the answer has neither result nor error".to_owned()))
}

/// Why an answer carried no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// The server answered with an error.
    #[error(transparent)]
    Rpc(RpcError),
    /// The answer is not JSON-RPC.
    #[error("not a JSON-RPC answer: {0}")]
    Malformed(String),
}
