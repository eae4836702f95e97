//! The AG-UI events this crate sends, as they go on the wire: `type` in
//! SCREAMING_SNAKE_CASE, fields in camelCase, optional fields left out
//! rather than `null` (the protocol refuses `null` for an optional field).

use serde::Serialize;
use serde_json::Value;

/// One AG-UI event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AgUiEvent {
    /// The run began.
    #[serde(rename_all = "camelCase")]
    RunStarted {
        /// The conversation (an agentloop chat).
        thread_id: String,
        /// The run.
        run_id: String,
    },
    /// The run ended without an error: completed, waiting for a person,
    /// or cancelled.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The run's structured output or return value, if it has one.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Why it ended.
        outcome: Outcome,
    },
    /// The run failed; nothing follows.
    RunError {
        /// What went wrong, for a person.
        message: String,
        /// The agentloop status or error kind (`max_iterations`,
        /// `provider`, …), for a program.
        code: String,
    },
    /// A model turn began.
    #[serde(rename_all = "camelCase")]
    StepStarted {
        /// `turn N`, counting from 1.
        step_name: String,
    },
    /// The model turn ended.
    #[serde(rename_all = "camelCase")]
    StepFinished {
        /// As in its [`AgUiEvent::StepStarted`].
        step_name: String,
    },
    /// An assistant text block began.
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        /// The block's message id.
        message_id: String,
        /// Always `assistant`.
        role: &'static str,
    },
    /// Text streamed into an open message.
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        /// The open message.
        message_id: String,
        /// The new text; never empty.
        delta: String,
    },
    /// The text block ended.
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        /// The message that ended.
        message_id: String,
    },
    /// The model began thinking.
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        /// The reasoning span.
        message_id: String,
    },
    /// A reasoning message began inside the span.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        /// The reasoning message (the span's id).
        message_id: String,
        /// Always `reasoning`.
        role: &'static str,
    },
    /// Thinking streamed into the reasoning message.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        /// The open reasoning message.
        message_id: String,
        /// The new thinking text; never empty.
        delta: String,
    },
    /// The reasoning message ended.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        /// The message that ended.
        message_id: String,
    },
    /// The reasoning span ended.
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        /// The span that ended.
        message_id: String,
    },
    /// The model began a tool call.
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        /// The call's id (the model's `tool_use` id).
        tool_call_id: String,
        /// The tool's name.
        tool_call_name: String,
    },
    /// JSON of the call's arguments, streamed.
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        /// The open call.
        tool_call_id: String,
        /// The next piece of the arguments' JSON text; never empty.
        delta: String,
    },
    /// The model finished writing the call.
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        /// The call.
        tool_call_id: String,
    },
    /// A tool call's result, as the model reads it.
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        /// The tool message holding the result.
        message_id: String,
        /// The call answered.
        tool_call_id: String,
        /// The result text.
        content: String,
        /// Always `tool`.
        role: &'static str,
    },
    /// The whole shared state: the application's, with the run's progress
    /// under `agentloop`.
    StateSnapshot {
        /// The state.
        snapshot: Value,
    },
    /// A change of the shared state, as JSON Patch operations.
    StateDelta {
        /// The operations, in order.
        delta: Vec<Value>,
    },
    /// An agentloop event with no AG-UI counterpart, whole: `name` is
    /// `agentloop.` and the event's kind (`agentloop.hook`, …).
    Custom {
        /// `agentloop.<kind>`.
        name: String,
        /// The agentloop event as stored.
        value: Value,
    },
}

/// Why a run finished (`RUN_FINISHED`'s `outcome`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outcome {
    /// The run completed, or waits only on calls of the client's own
    /// tools, which it names.
    #[serde(rename_all = "camelCase")]
    Success {
        /// The client's tool calls the run waits on: the client runs them
        /// and answers each with a `tool` message in its next run.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pending_tool_call_ids: Vec<String>,
    },
    /// The run waits for people: each interrupt is one call waiting for a
    /// decision or an answer. A new run whose `resume` entries answer them
    /// continues it.
    Interrupt {
        /// What it waits for; never empty.
        interrupts: Vec<Interrupt>,
    },
    /// The run was cancelled.
    Cancelled,
}

/// One call a suspended run waits on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The waiting call's id; a resume entry answers it by this id.
    pub id: String,
    /// `tool_approval` or `question`.
    pub reason: &'static str,
    /// The approval's reason or the question, for a person.
    pub message: String,
    /// The call waiting.
    pub tool_call_id: String,
    /// The answer expected: `{"approved": bool}` for an approval,
    /// `{"answer": string}` for a question.
    pub response_schema: Value,
}
