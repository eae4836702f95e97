//! The one contract between the loop and its consumers.
//!
//! A run is a stream of [`LoopEvent`]s that ends with exactly one
//! [`EventKind::Finished`] for the root path. Streaming chunks carry deltas;
//! consumers rebuild the message with [`StreamAssembler`](crate::stream::StreamAssembler).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;
use crate::options::CompactionStrategy;
use crate::render::ToolResultRenderBlock;
use crate::result::LoopResult;
use crate::stream::{StopReason, StreamDelta};
use crate::tokens::TokenTotals;

/// Where an event comes from: the tool-call ids that led from the root run
/// to the run that emitted it. Empty for the root (depth 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunPath(pub Vec<String>);

impl RunPath {
    /// The root run's path.
    pub fn root() -> Self {
        Self::default()
    }

    /// Nesting depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.0.len()
    }

    /// Whether this is the root run.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The path of a child run started by tool call `tool_use_id`.
    pub fn child(&self, tool_use_id: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(tool_use_id.to_owned());
        Self(segments)
    }

    /// This path placed under `prefix`.
    pub fn under(&self, prefix: &RunPath) -> Self {
        let mut segments = prefix.0.clone();
        segments.extend(self.0.iter().cloned());
        Self(segments)
    }
}

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        match &self.kind {
            EventKind::Finished { result } if self.path.is_root() => Some(result),
            _ => None,
        }
    }
}

/// What happened. Front ends match this exhaustively, so a new variant is a
/// compile error wherever it is not handled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A model request starts (seed 000).
    StreamingStart {
        /// 1-based model turn number within the run.
        iteration: u32,
    },
    /// The first content of the turn arrived.
    FirstChunk,
    /// Content arrived: a delta, never the whole message again.
    StreamingChunk {
        /// The change.
        delta: StreamDelta,
    },
    /// The model request ended; `stop_reason` is `None` when it failed or was
    /// cancelled.
    StreamingEnd {
        /// Why the turn ended.
        stop_reason: Option<StopReason>,
    },
    /// A message was committed to the history; consumers persist it.
    MessageCreated {
        /// The message.
        message: Message,
    },
    /// Tokens of one model turn.
    TokensConsumed {
        /// The turn's tokens and cost.
        tokens: TokenTotals,
    },
    /// Tools are about to run: the tool-result message, every block running.
    /// The final message has the same id (seed 003).
    PendingToolResult {
        /// Id the final tool-result message will have.
        message_id: String,
        /// One running block per call, in call order.
        blocks: Vec<ToolResultRenderBlock>,
    },
    /// A tool call starts (seed 002's `tool.start`).
    ToolStart {
        /// Call id.
        tool_use_id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Value,
        /// Whether the tool is a skill.
        is_skill: bool,
        /// Depth of the call: 1 for a call of the root run, +1 per nesting.
        depth: u32,
    },
    /// A running tool changed what it shows (seed 003).
    ToolBlockUpdate {
        /// Call id.
        tool_use_id: String,
        /// The block as it should now be shown.
        block: ToolResultRenderBlock,
    },
    /// A tool call ended (seed 002's `tool.end`).
    ToolEnd {
        /// Call id.
        tool_use_id: String,
        /// Tool name.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// Whether the tool is a skill.
        is_skill: bool,
        /// Depth of the call.
        depth: u32,
    },
    /// A strategy run starts (seed 001).
    AgentStart {
        /// Step budget.
        max_steps: u32,
    },
    /// A strategy step starts.
    AgentTurnStart {
        /// Step number, from 1.
        step: u32,
    },
    /// The strategy's reasoning for this step.
    AgentReason {
        /// The reasoning.
        message: String,
        /// Step number.
        step: u32,
    },
    /// The strategy needs input from a person; the run suspends.
    AgentRequestInput {
        /// The question.
        question: String,
        /// Step number.
        step: u32,
    },
    /// The strategy runs a tool.
    AgentToolStart {
        /// Tool name.
        tool: String,
        /// Step number.
        step: u32,
    },
    /// The strategy's tool finished.
    AgentToolComplete {
        /// Tool name.
        tool: String,
        /// The tool's output.
        result: String,
        /// Step number.
        step: u32,
    },
    /// The strategy's observation after a tool.
    AgentObserve {
        /// The observation.
        message: String,
        /// Step number.
        step: u32,
    },
    /// The strategy finished.
    AgentCompletion {
        /// Steps taken.
        steps: u32,
        /// The final answer.
        final_answer: String,
    },
    /// The strategy hit an error (it may retry).
    AgentError {
        /// What went wrong.
        message: String,
        /// Step number.
        step: u32,
    },
    /// What the run sends was compacted before a model call: older turns
    /// were summarised or left out of the request (never out of the stored
    /// history).
    ContextCompacted {
        /// How.
        strategy: CompactionStrategy,
        /// Estimated tokens of the request before compacting.
        tokens_before: u64,
        /// Estimated tokens of the request after.
        tokens_after: u64,
        /// History messages the request now leaves out or summarises, in
        /// all (earlier compactions included).
        messages_compacted: u32,
    },
    /// The run ended. Exactly one per run path; the last event of the root.
    Finished {
        /// The result.
        result: LoopResult,
    },
}

impl EventKind {
    /// The snake_case name of the event, as serialised in `type`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::StreamingStart { .. } => "streaming_start",
            Self::FirstChunk => "first_chunk",
            Self::StreamingChunk { .. } => "streaming_chunk",
            Self::StreamingEnd { .. } => "streaming_end",
            Self::MessageCreated { .. } => "message_created",
            Self::TokensConsumed { .. } => "tokens_consumed",
            Self::PendingToolResult { .. } => "pending_tool_result",
            Self::ToolStart { .. } => "tool_start",
            Self::ToolBlockUpdate { .. } => "tool_block_update",
            Self::ToolEnd { .. } => "tool_end",
            Self::AgentStart { .. } => "agent_start",
            Self::AgentTurnStart { .. } => "agent_turn_start",
            Self::AgentReason { .. } => "agent_reason",
            Self::AgentRequestInput { .. } => "agent_request_input",
            Self::AgentToolStart { .. } => "agent_tool_start",
            Self::AgentToolComplete { .. } => "agent_tool_complete",
            Self::AgentObserve { .. } => "agent_observe",
            Self::AgentCompletion { .. } => "agent_completion",
            Self::AgentError { .. } => "agent_error",
            Self::ContextCompacted { .. } => "context_compacted",
            Self::Finished { .. } => "finished",
        }
    }
}
