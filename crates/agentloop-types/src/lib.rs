//! Protocol types of agentloop: the messages a run works on, the events it
//! emits, the result it ends with, and the ports other layers implement.
//!
//! This crate does no I/O and depends only on serde, serde_json, thiserror,
//! futures and async-trait, so any layer (or application) can depend on it
//! cheaply.
//!
//! ```
//! use agentloop_types::{EventKind, LoopEvent, Message, StreamAssembler, StreamDelta, BlockStart};
//!
//! // A consumer rebuilds the streamed message from deltas.
//! let mut assembler = StreamAssembler::new();
//! assembler.apply(&StreamDelta::BlockStart { index: 0, block: BlockStart::Text }).unwrap();
//! assembler.apply(&StreamDelta::Text { index: 0, text: "Hello".into() }).unwrap();
//! let message = Message::new("m1", agentloop_types::Role::Assistant, assembler.finish());
//! assert_eq!(message.text(), "Hello");
//!
//! // Events are serde-tagged by `type`.
//! let event = LoopEvent { seq: 0, path: Default::default(), kind: EventKind::FirstChunk };
//! assert_eq!(serde_json::to_string(&event).unwrap(), r#"{"seq":0,"type":"first_chunk"}"#);
//! ```
//!
//! # Cargo features
//!
//! - `schema` (off by default): `schemars::JsonSchema` for the protocol
//!   types, so a consumer can publish the event stream's JSON Schema.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod approval;
pub mod attachment;
pub mod budget;
pub mod cancel;
pub mod context;
pub mod error;
pub mod event;
pub mod guardrail;
pub mod handoff;
pub mod history;
pub mod hook;
pub mod input;
pub mod message;
pub mod options;
pub mod ports;
pub mod render;
pub mod render_blocks;
pub mod result;
pub mod retrieval;
pub mod run_path;
pub mod sent;
pub mod shared_history;
pub mod state;
pub mod stop;
pub mod stream;
pub mod tokens;
pub mod tool;
pub mod tool_definition;
pub mod tool_input;
pub mod transcript;
pub mod vfs;

pub use approval::{
    ApprovalPolicies, ApprovalPolicy, ArgumentMatch, ChildResume, ChildSuspension, Decision,
    DecisionError, Decisions, PendingCall, Wait, approval_policy, check_decisions,
    command_has_prefix,
};
/// The attribute a [`Hook`] implementation (an async trait) is written
/// under.
pub use async_trait::async_trait;
pub use budget::{Budget, BudgetCall, BudgetHold, BudgetRefusal, Spend};
pub use cancel::CancellationToken;
pub use context::{
    ClearToolResults, ContextEdit, ContextEditedEvent, ContextOptions, READ_TOOL_RESULT_TOOL,
    TOOL_SEARCH_TOOL,
};
pub use error::{LoopError, ProviderError, ProviderErrorKind};
pub use event::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, ApprovalRequestedEvent, ContextCompactedEvent, EventKind, FinishedEvent,
    HandoffEvent, HookEvent, LoopEvent, MessageCreatedEvent, PendingToolResultEvent, RunPath,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
pub use guardrail::{
    Guardrail, GuardrailVerdict, OutputGuardrail, ToolGuardrail, first_trip, output_guardrail_hook,
    tool_guardrail_hook,
};
pub use handoff::{
    HANDOFF_TOOL_PREFIX, HandoffError, HandoffHistory, HandoffTarget, MAX_HANDOFFS,
    check_agent_name, handoff_tool_name,
};
pub use history::{HistoryCheck, HistoryError, close_dangling_calls, validate_history};
pub use hook::{
    FnHook, Hook, HookAnswer, HookDecision, HookError, HookInput, HookPoint, Hooks, hook_fn,
};
pub use input::{Inbox, RunInput, SteerStrategy};
pub use message::{
    ApiKind, AttachmentSource, ContentBlock, Message, Role, ToolResultBlock, ToolUseBlock,
};
pub use options::{
    CompactionOptions, CompactionStrategy, FINAL_OUTPUT_TOOL, LoopOptions, OutputMode,
    OutputSchema, ReasoningEffort, ReasoningSummary, RequestOptions, ResponseFormat, UsageLimits,
};
pub use ports::{
    AttachmentError, AttachmentLoader, LoadedAttachment, ModelProvider, ModelRequest, ModelStream,
};
pub use render::{
    BlockCategory, RenderingBlockGroup, RenderingContentBlock, ToolInfoRenderBlock,
    ToolResultRenderBlock, ToolResultStatus, categorize_block, render_groups,
};
pub use result::{LimitKind, LoopResult, LoopStatus, RunStop};
pub use retrieval::{Passage, RetrievalError, Retriever};
pub use sent::{NotInHistory, SentMessages, SentRequest};
pub use shared_history::History;
pub use state::{RUN_STATE_SCHEMA_VERSION, RunPhase, RunState};
pub use stop::{PartialTurn, RefusalDetails, StopReason};
pub use stream::{AssemblyError, BlockStart, ModelChunk, StreamAssembler, StreamDelta};
pub use tokens::TokenTotals;
pub use tool::{
    BreakLoop, Tool, ToolContext, ToolDefinition, ToolOptionKind, ToolOptionSpec, ToolOutput,
    ToolResult, ToolStream, ToolStreamEvent, parse_input, single_result,
};
pub use tool_input::ToolInput;
pub use vfs::{DirEntry, EntryKind, Metadata, Vfs, VfsError, VfsFor, WriteOrigin, normalize_path};
