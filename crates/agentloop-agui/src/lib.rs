//! A run's event stream as [AG-UI](https://docs.ag-ui.com) events: the
//! protocol between an agent back end and the app its users see.
//!
//! [`Encoder`] is sans-IO: stored [`LoopEvent`](agentloop_types::LoopEvent)s
//! in, [`AgUiEvent`]s out. How agentloop's events map:
//!
//! | agentloop | AG-UI |
//! | --- | --- |
//! | `streaming_start` / `streaming_end` | `STEP_STARTED` / `STEP_FINISHED` (`turn N`) |
//! | a text block's deltas | `TEXT_MESSAGE_START` / `_CONTENT` / `_END` |
//! | a thinking block's deltas | `REASONING_START`, `REASONING_MESSAGE_START` / `_CONTENT` / `_END`, `REASONING_END` |
//! | a tool-use block's deltas | `TOOL_CALL_START` / `_ARGS` / `_END` |
//! | a message holding tool results | one `TOOL_CALL_RESULT` per result |
//! | `finished`: complete | `RUN_FINISHED`, outcome `success`, `result` the structured output |
//! | `finished`: suspended | `RUN_FINISHED`, outcome `interrupt`, one interrupt per waiting call; outcome `success` with `pendingToolCallIds` when only front-end tools' calls wait |
//! | `streaming_start`, `tokens_consumed`, `handoff`, `finished` | `STATE_DELTA` of the run's progress (after a `STATE_SNAPSHOT` at the start) |
//! | `finished`: cancelled | `RUN_FINISHED`, outcome `cancelled` |
//! | `finished`: error, limits | `RUN_ERROR`, `code` the status or error kind |
//! | tool progress, hooks, approvals, strategy events, compaction | `CUSTOM`, named `agentloop.<kind>`, the event whole |
//!
//! Front-end tools ([`FrontendTool`]) are tools the client declares in its
//! run input and runs itself: a call of one suspends the run, and the
//! client's `tool` message answers it ([`RunAgentInput::tool_answers`]).
//!
//! A sub-agent's events are not sent: its work shows as the tool call
//! that started it and that call's result.
//!
//! # Cargo features
//!
//! None.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod encoder;
mod event;
mod frontend;
mod input;

pub use encoder::Encoder;
pub use event::{AgUiEvent, Interrupt, Outcome};
pub use frontend::{
    FrontendTool, FrontendToolError, FrontendToolSpec, MAX_FRONTEND_TOOLS, validate_frontend_tools,
};
pub use input::{ResumeEntry, ResumeError, ResumeStatus, RunAgentInput};
