//! A run's event stream as the AI SDK's UI message stream: the chunks the
//! `ai` package's chat hooks (`useChat`) and `readUIMessageStream` read,
//! one SSE `data:` line each, ended by `data: [DONE]`, in a response
//! carrying `x-vercel-ai-ui-message-stream: v1`.
//!
//! [`Encoder`] is sans-IO: stored [`LoopEvent`](agentloop_types::LoopEvent)s
//! in, [`UiChunk`]s out, all of one assistant message. How agentloop's
//! events map:
//!
//! | agentloop | UI message stream |
//! | --- | --- |
//! | the stream opens | `start` (`messageId`, `messageMetadata`) |
//! | `streaming_start` / `streaming_end` | `start-step` / `finish-step` |
//! | a text block's deltas | `text-start` / `text-delta` / `text-end` |
//! | a thinking block's deltas | `reasoning-start` / `reasoning-delta` / `reasoning-end` |
//! | a tool-use block's deltas | `tool-input-start` / `tool-input-delta`, then `tool-input-available` (or `tool-input-error` when the input is not JSON); dynamic tools |
//! | a message holding tool results | `tool-output-available` (the result's text), `tool-output-error` for a failed call, `tool-output-denied` for a call the person refused |
//! | `finished`: complete | `finish`, `finishReason: stop` |
//! | `finished`: suspended | `tool-approval-request` per call waiting for approval (`approvalId` is the call id), then `finish`, `finishReason: tool-calls`; a question waits for the call's output |
//! | `finished`: cancelled | `abort` |
//! | `finished`: error, limits | `error`, then `finish`, `finishReason: error` |
//! | tool progress, handoffs, hooks, approvals, strategy events, compaction | a transient `data-agentloop-event` part, the event whole |
//!
//! The `finish` chunk's metadata holds the run's status and its tokens and
//! cost. [`ChatRequest`] is the body the client's chat transport posts;
//! the tool parts of its last (assistant) message carry the person's
//! approval responses and the outputs it gave calls, which
//! [`ToolResponse::decision`] turns into agentloop decisions.
//!
//! A sub-agent's events are not sent: its work shows as the tool call
//! that started it and that call's result.
//!
//! # Cargo features
//!
//! None.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod chunk;
mod encoder;
mod request;

pub use chunk::{DONE, FinishReason, STREAM_HEADER, UiChunk};
pub use encoder::Encoder;
pub use request::{Answer, AnswerError, ChatRequest, Role, ToolResponse, UiMessage};
