//! [`UiChunk`]: the parts of the AI SDK's UI message stream, as they go on
//! the wire.

use serde_json::{Map, Value, json};

/// Why a message's generation finished, as the `finish` chunk says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model was done.
    Stop,
    /// The run stopped on tool calls that wait for the client (approvals,
    /// questions).
    ToolCalls,
    /// The run failed or hit a limit.
    Error,
}

impl FinishReason {
    /// The name the protocol gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool-calls",
            Self::Error => "error",
        }
    }
}

/// One chunk of a UI message stream (one SSE `data:` line), as the `ai`
/// package's `UIMessageChunk` defines it. Tool calls are sent as dynamic
/// tools (`dynamic: true`): the client knows them by name only.
#[derive(Debug, Clone, PartialEq)]
pub enum UiChunk {
    /// The assistant message begins.
    Start {
        /// The message's id.
        message_id: String,
        /// What the message carries beside its parts.
        message_metadata: Option<Value>,
    },
    /// A step (one model turn) begins.
    StartStep,
    /// The step ends.
    FinishStep,
    /// A text part begins.
    TextStart {
        /// The part's id.
        id: String,
    },
    /// More text of the part.
    TextDelta {
        /// The part's id.
        id: String,
        /// The text.
        delta: String,
    },
    /// The text part is whole.
    TextEnd {
        /// The part's id.
        id: String,
    },
    /// A reasoning part begins.
    ReasoningStart {
        /// The part's id.
        id: String,
    },
    /// More reasoning.
    ReasoningDelta {
        /// The part's id.
        id: String,
        /// The text.
        delta: String,
    },
    /// The reasoning part is whole.
    ReasoningEnd {
        /// The part's id.
        id: String,
    },
    /// The model began a tool call; its input streams next.
    ToolInputStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
    },
    /// More of the call's input (JSON text).
    ToolInputDelta {
        /// The call's id.
        tool_call_id: String,
        /// The text.
        input_text_delta: String,
    },
    /// The call's input is whole.
    ToolInputAvailable {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The input.
        input: Value,
    },
    /// The call's input is not valid JSON.
    ToolInputError {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The input as the model wrote it.
        input: Value,
        /// Why it is refused.
        error_text: String,
    },
    /// The call waits for the person's approval.
    ToolApprovalRequest {
        /// The approval's id (the call's id).
        approval_id: String,
        /// The call's id.
        tool_call_id: String,
    },
    /// The call's result.
    ToolOutputAvailable {
        /// The call's id.
        tool_call_id: String,
        /// The result.
        output: Value,
    },
    /// The call failed.
    ToolOutputError {
        /// The call's id.
        tool_call_id: String,
        /// What the model was told.
        error_text: String,
    },
    /// The person refused the call; it did not run.
    ToolOutputDenied {
        /// The call's id.
        tool_call_id: String,
    },
    /// An application data part, `data-<name>`.
    Data {
        /// The name after `data-`.
        name: String,
        /// The data.
        data: Value,
        /// Given to the client's `onData` only, not kept in the message.
        transient: bool,
    },
    /// The run failed.
    Error {
        /// Why.
        error_text: String,
    },
    /// The message is finished.
    Finish {
        /// Why.
        finish_reason: FinishReason,
        /// Merged into the message's metadata.
        message_metadata: Option<Value>,
    },
    /// The run was stopped.
    Abort {
        /// Why.
        reason: String,
    },
}

impl UiChunk {
    /// The chunk as the JSON object the protocol sends.
    pub fn to_json(&self) -> Value {
        let mut out = match self {
            Self::Start {
                message_id,
                message_metadata,
            } => with_metadata(
                json!({ "type": "start", "messageId": message_id }),
                message_metadata,
            ),
            Self::StartStep => json!({ "type": "start-step" }),
            Self::FinishStep => json!({ "type": "finish-step" }),
            Self::TextStart { id } => json!({ "type": "text-start", "id": id }),
            Self::TextDelta { id, delta } => {
                json!({ "type": "text-delta", "id": id, "delta": delta })
            }
            Self::TextEnd { id } => json!({ "type": "text-end", "id": id }),
            Self::ReasoningStart { id } => json!({ "type": "reasoning-start", "id": id }),
            Self::ReasoningDelta { id, delta } => {
                json!({ "type": "reasoning-delta", "id": id, "delta": delta })
            }
            Self::ReasoningEnd { id } => json!({ "type": "reasoning-end", "id": id }),
            Self::ToolInputStart {
                tool_call_id,
                tool_name,
            } => json!({
                "type": "tool-input-start",
                "toolCallId": tool_call_id,
                "toolName": tool_name,
                "dynamic": true,
            }),
            Self::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => json!({
                "type": "tool-input-delta",
                "toolCallId": tool_call_id,
                "inputTextDelta": input_text_delta,
            }),
            Self::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => json!({
                "type": "tool-input-available",
                "toolCallId": tool_call_id,
                "toolName": tool_name,
                "input": input,
                "dynamic": true,
            }),
            Self::ToolInputError {
                tool_call_id,
                tool_name,
                input,
                error_text,
            } => json!({
                "type": "tool-input-error",
                "toolCallId": tool_call_id,
                "toolName": tool_name,
                "input": input,
                "errorText": error_text,
                "dynamic": true,
            }),
            Self::ToolApprovalRequest {
                approval_id,
                tool_call_id,
            } => json!({
                "type": "tool-approval-request",
                "approvalId": approval_id,
                "toolCallId": tool_call_id,
            }),
            Self::ToolOutputAvailable {
                tool_call_id,
                output,
            } => json!({
                "type": "tool-output-available",
                "toolCallId": tool_call_id,
                "output": output,
                "dynamic": true,
            }),
            Self::ToolOutputError {
                tool_call_id,
                error_text,
            } => json!({
                "type": "tool-output-error",
                "toolCallId": tool_call_id,
                "errorText": error_text,
                "dynamic": true,
            }),
            Self::ToolOutputDenied { tool_call_id } => {
                json!({ "type": "tool-output-denied", "toolCallId": tool_call_id })
            }
            Self::Data {
                name,
                data,
                transient,
            } => json!({
                "type": format!("data-{name}"),
                "data": data,
                "transient": transient,
            }),
            Self::Error { error_text } => json!({ "type": "error", "errorText": error_text }),
            Self::Finish {
                finish_reason,
                message_metadata,
            } => with_metadata(
                json!({ "type": "finish", "finishReason": finish_reason.as_str() }),
                message_metadata,
            ),
            Self::Abort { reason } => json!({ "type": "abort", "reason": reason }),
        };
        if let Value::Object(map) = &mut out {
            map.retain(|_, value| !value.is_null());
        }
        out
    }

    /// The chunk as the text of its SSE `data:` line.
    pub fn to_data(&self) -> String {
        self.to_json().to_string()
    }
}

fn with_metadata(mut chunk: Value, metadata: &Option<Value>) -> Value {
    if let (Value::Object(map), Some(metadata)) = (&mut chunk, metadata) {
        map.insert("messageMetadata".to_owned(), metadata.clone());
    }
    chunk
}

/// The SSE `data:` text that ends a UI message stream.
pub const DONE: &str = "[DONE]";

/// The response header that tells the client the body is a UI message
/// stream, and its value.
pub const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// An empty JSON object, for a call whose input was empty.
pub(crate) fn empty_object() -> Value {
    Value::Object(Map::new())
}
