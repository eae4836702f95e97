//! The one contract between the loop and its consumers.
//!
//! A run is a stream of [`LoopEvent`]s that ends with exactly one
//! [`EventKind::Finished`] for the root path. Streaming chunks carry deltas;
//! consumers rebuild the message with [`StreamAssembler`](crate::stream::StreamAssembler).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::run_path::RunPath;

use crate::context::ContextEditedEvent;
use crate::hook::{HookDecision, HookPoint};
use crate::message::Message;
use crate::options::CompactionStrategy;
use crate::render_blocks::ToolResultRenderBlock;
use crate::result::LoopResult;
use crate::sent::SentRequest;
use crate::stream::{StopReason, StreamDelta};
use crate::tokens::TokenTotals;
use crate::tool_input::ToolInput;

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LoopEvent {
    /// Strictly increasing within the stream it was read from.
    pub seq: u64,
    /// The run that emitted it.
    #[serde(default, skip_serializing_if = "RunPath::is_root")]
    pub path: RunPath,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl LoopEvent {
    /// The result, when this is the terminal event of the root run.
    pub fn root_result(&self) -> Option<&LoopResult> {
        if let EventKind::Finished(FinishedEvent { result }) = &self.kind
            && self.path.is_root()
        {
            Some(result)
        } else {
            None
        }
    }

    /// The result, when this is the terminal event of the root run, taken
    /// out of the event.
    pub fn into_root_result(self) -> Option<LoopResult> {
        match self.kind {
            EventKind::Finished(FinishedEvent { result }) if self.path.is_root() => Some(*result),
            _ => None,
        }
    }
}

/// What happened. Front ends match this exhaustively, so a new variant is a
/// compile error wherever it is not handled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A model request starts (seed 000).
    StreamingStart(StreamingStartEvent),
    /// The first content of the turn arrived.
    FirstChunk,
    /// Content arrived: a delta, never the whole message again.
    StreamingChunk(StreamingChunkEvent),
    /// The model request ended; `stop_reason` is `None` when it failed or was
    /// cancelled.
    StreamingEnd(StreamingEndEvent),
    /// A message was committed to the history; consumers persist it.
    MessageCreated(MessageCreatedEvent),
    /// Tokens of one model turn.
    TokensConsumed(TokensConsumedEvent),
    /// Tools are about to run: the tool-result message, every block running.
    /// The final message has the same id (seed 003).
    PendingToolResult(PendingToolResultEvent),
    /// A tool call starts (seed 002's `tool.start`).
    ToolStart(ToolStartEvent),
    /// A running tool changed what it shows (seed 003).
    ToolBlockUpdate(ToolBlockUpdateEvent),
    /// A tool call ended (seed 002's `tool.end`).
    ToolEnd(ToolEndEvent),
    /// A strategy run starts (seed 001).
    AgentStart(AgentStartEvent),
    /// A strategy step starts.
    AgentTurnStart(AgentTurnStartEvent),
    /// The strategy's reasoning for this step.
    AgentReason(AgentReasonEvent),
    /// The strategy needs input from a person; the run suspends.
    AgentRequestInput(AgentRequestInputEvent),
    /// The strategy runs a tool.
    AgentToolStart(AgentToolStartEvent),
    /// The strategy's tool finished.
    AgentToolComplete(AgentToolCompleteEvent),
    /// The strategy's observation after a tool.
    AgentObserve(AgentObserveEvent),
    /// The strategy finished.
    AgentCompletion(AgentCompletionEvent),
    /// The strategy hit an error (it may retry).
    AgentError(AgentErrorEvent),
    /// What the run sends was compacted before a model call: older turns
    /// were summarised or left out of the request (never out of the stored
    /// history).
    ContextCompacted(ContextCompactedEvent),
    /// What the run sends changed before a model call: tools loaded by
    /// tool search, results shortened to their budget or older results
    /// cleared (never in the stored history). Boxed: rare.
    ContextEdited(Box<ContextEditedEvent>),
    // Approvals, hooks and handoffs are rare and the largest kinds:
    // boxed, so that every other event is not as large as they are.
    /// A call waits for a person's approval; the run runs the turn's other
    /// calls, then ends `suspended`.
    ApprovalRequested(Box<ApprovalRequestedEvent>),
    /// A lifecycle hook decided about a moment of the run (see
    /// [`hook`](crate::hook)).
    Hook(Box<HookEvent>),
    /// The agent speaking handed the conversation to another agent (see
    /// [`handoff`](crate::handoff)).
    Handoff(Box<HandoffEvent>),
    /// The run ended. Exactly one per run path; the last event of the root.
    Finished(FinishedEvent),
}

impl EventKind {
    /// The snake_case name of the event, as serialised in `type`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::StreamingStart(StreamingStartEvent { .. }) => "streaming_start",
            Self::FirstChunk => "first_chunk",
            Self::StreamingChunk(StreamingChunkEvent { .. }) => "streaming_chunk",
            Self::StreamingEnd(StreamingEndEvent { .. }) => "streaming_end",
            Self::MessageCreated(MessageCreatedEvent { .. }) => "message_created",
            Self::TokensConsumed(TokensConsumedEvent { .. }) => "tokens_consumed",
            Self::PendingToolResult(PendingToolResultEvent { .. }) => "pending_tool_result",
            Self::ToolStart(ToolStartEvent { .. }) => "tool_start",
            Self::ToolBlockUpdate(ToolBlockUpdateEvent { .. }) => "tool_block_update",
            Self::ToolEnd(ToolEndEvent { .. }) => "tool_end",
            Self::AgentStart(AgentStartEvent { .. }) => "agent_start",
            Self::AgentTurnStart(AgentTurnStartEvent { .. }) => "agent_turn_start",
            Self::AgentReason(AgentReasonEvent { .. }) => "agent_reason",
            Self::AgentRequestInput(AgentRequestInputEvent { .. }) => "agent_request_input",
            Self::AgentToolStart(AgentToolStartEvent { .. }) => "agent_tool_start",
            Self::AgentToolComplete(AgentToolCompleteEvent { .. }) => "agent_tool_complete",
            Self::AgentObserve(AgentObserveEvent { .. }) => "agent_observe",
            Self::AgentCompletion(AgentCompletionEvent { .. }) => "agent_completion",
            Self::AgentError(AgentErrorEvent { .. }) => "agent_error",
            Self::ContextCompacted(ContextCompactedEvent { .. }) => "context_compacted",
            Self::ContextEdited(_) => "context_edited",
            Self::ApprovalRequested(_) => "approval_requested",
            Self::Hook(_) => "hook",
            Self::Handoff(_) => "handoff",
            Self::Finished(FinishedEvent { .. }) => "finished",
        }
    }
}

// The payload of each event kind.

/// A model request starts (seed 000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamingStartEvent {
    /// 1-based model turn number within the run.
    pub iteration: u32,
    /// The agent speaking, in a run whose agents hand off to each other
    /// (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the request carried, recorded by difference with the run's
    /// history and previous request (see [`SentRequest`]). Absent from
    /// logs written before requests were recorded. Boxed: most consumers
    /// never read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<SentRequest>>,
}

/// Content arrived: a delta, never the whole message again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamingChunkEvent {
    /// The change.
    pub delta: StreamDelta,
}

/// The model request ended; `stop_reason` is `None` when it failed or was
/// cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamingEndEvent {
    /// Why the turn ended.
    pub stop_reason: Option<StopReason>,
}

/// A message was committed to the history; consumers persist it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageCreatedEvent {
    /// The message.
    pub message: Message,
}

/// Tokens of one model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokensConsumedEvent {
    /// The turn's tokens and cost.
    pub tokens: TokenTotals,
}

/// Tools are about to run: the tool-result message, every block running.
/// The final message has the same id (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingToolResultEvent {
    /// Id the final tool-result message will have.
    pub message_id: String,
    /// One running block per call, in call order.
    pub blocks: Vec<ToolResultRenderBlock>,
}

/// A tool call starts (seed 002's `tool.start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolStartEvent {
    /// Call id.
    pub tool_use_id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub input: ToolInput,
    /// Whether the tool is a skill.
    pub is_skill: bool,
    /// Depth of the call: 1 for a call of the root run, +1 per nesting.
    pub depth: u32,
}

/// A running tool changed what it shows (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolBlockUpdateEvent {
    /// Call id.
    pub tool_use_id: String,
    /// The block as it should now be shown.
    // Boxed, as `FinishedEvent::result` is.
    pub block: Box<ToolResultRenderBlock>,
}

/// A tool call ended (seed 002's `tool.end`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolEndEvent {
    /// Call id.
    pub tool_use_id: String,
    /// Tool name.
    pub name: String,
    /// Whether it failed.
    pub is_error: bool,
    /// Whether the tool is a skill.
    pub is_skill: bool,
    /// Depth of the call.
    pub depth: u32,
    /// How long the call took, from its start to its end, in milliseconds
    /// of the run's clock (at most `u32::MAX`, some 49 days: 32 bits keep
    /// every event small). Absent from logs written before calls were
    /// timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u32>,
}

/// A strategy run starts (seed 001).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentStartEvent {
    /// Step budget.
    pub max_steps: u32,
}

/// A strategy step starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentTurnStartEvent {
    /// Step number, from 1.
    pub step: u32,
}

/// The strategy's reasoning for this step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentReasonEvent {
    /// The reasoning.
    pub message: String,
    /// Step number.
    pub step: u32,
}

/// The strategy needs input from a person; the run suspends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentRequestInputEvent {
    /// The question.
    pub question: String,
    /// Step number.
    pub step: u32,
}

/// The strategy runs a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentToolStartEvent {
    /// Tool name.
    pub tool: String,
    /// Step number.
    pub step: u32,
}

/// The strategy's tool finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentToolCompleteEvent {
    /// Tool name.
    pub tool: String,
    /// The tool's output.
    pub result: String,
    /// Step number.
    pub step: u32,
}

/// The strategy's observation after a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentObserveEvent {
    /// The observation.
    pub message: String,
    /// Step number.
    pub step: u32,
}

/// The strategy finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentCompletionEvent {
    /// Steps taken.
    pub steps: u32,
    /// The final answer.
    pub final_answer: String,
}

/// The strategy hit an error (it may retry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentErrorEvent {
    /// What went wrong.
    pub message: String,
    /// Step number.
    pub step: u32,
}

/// The run ended. Exactly one per run path; the last event of the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FinishedEvent {
    /// The result.
    // Boxed: it is the largest payload of any event, and every event is as
    // large as the largest (a run buffers a step's events).
    pub result: Box<LoopResult>,
}

/// What the run sends was compacted before a model call: older turns
/// were summarised or left out of the request (never out of the stored
/// history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ContextCompactedEvent {
    /// How.
    pub strategy: CompactionStrategy,
    /// Estimated tokens of the request before compacting.
    pub tokens_before: u64,
    /// Estimated tokens of the request after.
    pub tokens_after: u64,
    /// History messages the request now leaves out or summarises, in
    /// all (earlier compactions included).
    pub messages_compacted: u32,
}

/// A call waits for a person's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApprovalRequestedEvent {
    /// The call's id.
    pub tool_use_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments the model gave.
    pub arguments: Value,
    /// Why it needs approval.
    pub reason: String,
}

/// A lifecycle hook decided about a moment of the run. Recorded before
/// the decision takes effect; a resumed run never asks again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HookEvent {
    /// The hook's name.
    pub hook: String,
    /// The moment.
    pub point: HookPoint,
    /// The tool call the moment is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What it decided.
    #[serde(flatten)]
    pub decision: HookDecision,
    /// The decision does not apply at this point and changed nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
    /// Why the hook failed to answer, when it did (the decision is then
    /// its configured default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The hook is a guardrail (an output or tool guardrail).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guardrail: bool,
    /// What the hook says it did (a memory extraction: the memories it
    /// wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The agent speaking handed the conversation to another: the next model
/// call is the target's. Recorded once, after the tool results of the turn
/// that called the handoff tool; a resumed run never repeats it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HandoffEvent {
    /// The agent that handed off.
    pub from: String,
    /// The agent that answers from now on.
    pub to: String,
    /// The handoff tool's call.
    pub tool_use_id: String,
    /// The reason the model gave, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Handoffs taken by the run so far, this one included.
    pub handoffs: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event is as large as its largest kind, and a run buffers a
    /// step's events: kinds with large payloads box them.
    #[test]
    fn an_event_stays_small() {
        assert!(
            std::mem::size_of::<EventKind>() <= 72,
            "EventKind is {} bytes",
            std::mem::size_of::<EventKind>()
        );
    }
}
