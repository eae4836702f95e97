//! [`Encoder`]: a run's stored events in, UI message stream chunks out.
//!
//! Only the root run's events are encoded: a sub-agent's work shows as the
//! tool call that started it and that call's result (and, when one of its
//! calls waits for the person, as that call).

use std::collections::{BTreeMap, BTreeSet};

use agentloop_types::{
    BlockStart, ContentBlock, EventKind, LoopEvent, LoopResult, LoopStatus, PendingCall,
    StreamDelta, TokenTotals, Wait,
};
use serde_json::{Value, json};

use crate::chunk::{FinishReason, UiChunk, empty_object};

/// What an open content block of the current turn is, in the stream's
/// terms.
#[derive(Debug, Clone, PartialEq)]
enum Open {
    Text(String),
    Reasoning(String),
    ToolCall {
        id: String,
        name: String,
        input: String,
    },
    /// A block the stream has no part for (redacted thinking, a provider's
    /// own block): its deltas are dropped.
    Other,
}

/// Turns one run's events into the chunks of one assistant message, in
/// order.
///
/// Start with [`Encoder::start`], pass every event of the run to
/// [`Encoder::encode`], and call [`Encoder::end`] when the events end: it
/// closes what is still open and, if the run's result never came, reports
/// the run as failed, so a client always sees a whole message.
#[derive(Debug)]
pub struct Encoder {
    message_id: String,
    metadata: Option<Value>,
    /// The model turn whose step is open, if one is.
    turn: Option<u32>,
    /// The current turn's open blocks, by block index.
    open: BTreeMap<u32, Open>,
    /// Calls whose tool part the client has from this stream.
    announced: BTreeSet<String>,
    /// Calls the person refused in the request this stream answers.
    denied: BTreeSet<String>,
    /// Suspensions up to this seq are past: the stream goes on through
    /// them (a replay of a run that was resumed since).
    replay_through: Option<u64>,
    /// Set once the message finished.
    ended: bool,
    /// The run's tokens and cost so far.
    tokens: TokenTotals,
}

impl Encoder {
    /// An encoder for the assistant message `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            metadata: None,
            turn: None,
            open: BTreeMap::new(),
            announced: BTreeSet::new(),
            denied: BTreeSet::new(),
            replay_through: None,
            ended: false,
            tokens: TokenTotals::default(),
        }
    }

    /// The message's metadata, sent with its `start` chunk.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The calls the person refused in the request this stream answers:
    /// their results are sent as `tool-output-denied`.
    pub fn with_denied(mut self, calls: impl IntoIterator<Item = String>) -> Self {
        self.denied = calls.into_iter().collect();
        self
    }

    /// Replays a run from its first event: a suspension at or before
    /// `seq` is one the run was resumed from since, so it does not end the
    /// message (its calls still get their approval requests).
    pub fn replaying_through(mut self, seq: Option<u64>) -> Self {
        self.replay_through = seq;
        self
    }

    /// Whether the message finished: nothing more will be encoded.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The message's first chunk.
    pub fn start(&self) -> Vec<UiChunk> {
        vec![UiChunk::Start {
            message_id: self.message_id.clone(),
            message_metadata: self.metadata.clone(),
        }]
    }

    /// The chunks `event` stands for; none for an event of a sub-agent or
    /// after the message finished.
    pub fn encode(&mut self, event: &LoopEvent) -> Vec<UiChunk> {
        if self.ended || !event.path.is_root() {
            return Vec::new();
        }
        let mut out = Vec::new();
        match &event.kind {
            EventKind::StreamingStart(start) => {
                self.close_turn(&mut out);
                self.turn = Some(start.iteration);
                out.push(UiChunk::StartStep);
            }
            EventKind::StreamingChunk(chunk) => self.delta(&chunk.delta, &mut out),
            EventKind::StreamingEnd(_) => self.close_turn(&mut out),
            EventKind::MessageCreated(created) => {
                for block in &created.message.content {
                    if let ContentBlock::ToolResult(result) = block {
                        let tool_call_id = result.tool_use_id.clone();
                        out.push(if self.denied.contains(&tool_call_id) {
                            UiChunk::ToolOutputDenied { tool_call_id }
                        } else if result.is_error {
                            UiChunk::ToolOutputError {
                                tool_call_id,
                                error_text: result.content.clone(),
                            }
                        } else {
                            UiChunk::ToolOutputAvailable {
                                tool_call_id,
                                output: Value::String(result.content.clone()),
                            }
                        });
                    }
                }
            }
            EventKind::TokensConsumed(consumed) => self.tokens += consumed.tokens,
            EventKind::Finished(finished) => {
                self.close_turn(&mut out);
                let past = self.replay_through.is_some_and(|seq| event.seq <= seq);
                self.finished(&finished.result, past, &mut out);
            }
            EventKind::FirstChunk => {}
            // The tool's life after the model wrote the call, handoffs,
            // strategy events, hooks, compaction and context edits, approvals (sent with the
            // suspension): whole, for the client's `onData`.
            EventKind::PendingToolResult(_)
            | EventKind::ToolStart(_)
            | EventKind::ToolBlockUpdate(_)
            | EventKind::ToolEnd(_)
            | EventKind::Handoff(_)
            | EventKind::AgentStart(_)
            | EventKind::AgentTurnStart(_)
            | EventKind::AgentReason(_)
            | EventKind::AgentRequestInput(_)
            | EventKind::AgentToolStart(_)
            | EventKind::AgentToolComplete(_)
            | EventKind::AgentObserve(_)
            | EventKind::AgentCompletion(_)
            | EventKind::AgentError(_)
            | EventKind::ContextCompacted(_)
            | EventKind::ContextEdited(_)
            | EventKind::ApprovalRequested(_)
            | EventKind::Hook(_) => out.push(UiChunk::Data {
                name: "agentloop-event".to_owned(),
                data: serde_json::to_value(event).unwrap_or(Value::Null),
                transient: true,
            }),
        }
        out
    }

    /// Closes what is open and, when the run's result never came (the
    /// events broke off), finishes the message with an error.
    pub fn end(&mut self) -> Vec<UiChunk> {
        if self.ended {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.close_turn(&mut out);
        out.push(UiChunk::Error {
            error_text: "the run's event stream ended before its result".to_owned(),
        });
        out.push(self.finish(FinishReason::Error, "error"));
        self.ended = true;
        out
    }

    fn block_id(&self, index: u32) -> String {
        format!("{}.{}.{}", self.message_id, self.turn.unwrap_or(0), index)
    }

    fn delta(&mut self, delta: &StreamDelta, out: &mut Vec<UiChunk>) {
        if self.turn.is_none() {
            // A delta outside a turn cannot be placed; the engine never
            // sends one.
            return;
        }
        match delta {
            StreamDelta::BlockStart { index, block } => {
                self.close_block(*index, out);
                let open = match block {
                    BlockStart::Text => {
                        let id = self.block_id(*index);
                        out.push(UiChunk::TextStart { id: id.clone() });
                        Open::Text(id)
                    }
                    BlockStart::Thinking => {
                        let id = self.block_id(*index);
                        out.push(UiChunk::ReasoningStart { id: id.clone() });
                        Open::Reasoning(id)
                    }
                    BlockStart::ToolUse { id, name } => {
                        out.push(UiChunk::ToolInputStart {
                            tool_call_id: id.clone(),
                            tool_name: name.clone(),
                        });
                        self.announced.insert(id.clone());
                        Open::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            input: String::new(),
                        }
                    }
                    BlockStart::RedactedThinking { .. } | BlockStart::Provider { .. } => {
                        Open::Other
                    }
                };
                self.open.insert(*index, open);
            }
            StreamDelta::Text { index, text } => {
                if let (Some(Open::Text(id)), false) = (self.open.get(index), text.is_empty()) {
                    out.push(UiChunk::TextDelta {
                        id: id.clone(),
                        delta: text.clone(),
                    });
                }
            }
            StreamDelta::Thinking { index, thinking } => {
                if let (Some(Open::Reasoning(id)), false) =
                    (self.open.get(index), thinking.is_empty())
                {
                    out.push(UiChunk::ReasoningDelta {
                        id: id.clone(),
                        delta: thinking.clone(),
                    });
                }
            }
            StreamDelta::ToolInput {
                index,
                partial_json,
            } => {
                if let (Some(Open::ToolCall { id, input, .. }), false) =
                    (self.open.get_mut(index), partial_json.is_empty())
                {
                    input.push_str(partial_json);
                    out.push(UiChunk::ToolInputDelta {
                        tool_call_id: id.clone(),
                        input_text_delta: partial_json.clone(),
                    });
                }
            }
            StreamDelta::BlockStop { index } => self.close_block(*index, out),
            // Signatures authenticate thinking to its provider; citations
            // annotate text already sent. Neither has a chunk.
            StreamDelta::Signature { .. } | StreamDelta::Citation { .. } => {}
        }
    }

    fn close_block(&mut self, index: u32, out: &mut Vec<UiChunk>) {
        match self.open.remove(&index) {
            Some(Open::Text(id)) => out.push(UiChunk::TextEnd { id }),
            Some(Open::Reasoning(id)) => out.push(UiChunk::ReasoningEnd { id }),
            Some(Open::ToolCall { id, name, input }) => {
                let parsed = if input.trim().is_empty() {
                    Ok(empty_object())
                } else {
                    serde_json::from_str::<Value>(&input)
                };
                out.push(match parsed {
                    Ok(input) => UiChunk::ToolInputAvailable {
                        tool_call_id: id,
                        tool_name: name,
                        input,
                    },
                    Err(e) => UiChunk::ToolInputError {
                        tool_call_id: id,
                        tool_name: name,
                        input: Value::String(input),
                        error_text: format!("the call's input is not JSON: {e}"),
                    },
                });
            }
            Some(Open::Other) | None => {}
        }
    }

    /// Closes the current turn: its blocks left open (a stream cut short)
    /// and its step.
    fn close_turn(&mut self, out: &mut Vec<UiChunk>) {
        let indexes: Vec<u32> = self.open.keys().copied().collect();
        for index in indexes {
            self.close_block(index, out);
        }
        if self.turn.take().is_some() {
            out.push(UiChunk::FinishStep);
        }
    }

    /// The chunks of the run's result; `past` for a suspension the run
    /// has been resumed from since.
    fn finished(&mut self, result: &LoopResult, past: bool, out: &mut Vec<UiChunk>) {
        let status = result.status.name();
        match &result.status {
            LoopStatus::Complete { .. } => out.push(self.finish(FinishReason::Stop, status)),
            LoopStatus::Suspended { pending, .. } if !pending.is_empty() => {
                for call in pending {
                    self.waiting_call(call, out);
                }
                if past {
                    return;
                }
                out.push(self.finish(FinishReason::ToolCalls, status));
            }
            LoopStatus::Suspended { .. } => {
                out.push(UiChunk::Error {
                    error_text: "the run suspended with no call waiting".to_owned(),
                });
                out.push(self.finish(FinishReason::Error, status));
            }
            LoopStatus::Cancelled => out.push(UiChunk::Abort {
                reason: "the run was cancelled".to_owned(),
            }),
            LoopStatus::Error { error } => {
                out.push(UiChunk::Error {
                    error_text: error.to_string(),
                });
                out.push(self.finish(FinishReason::Error, status));
            }
            LoopStatus::MaxIterations => {
                out.push(UiChunk::Error {
                    error_text: "the run reached its limit of model turns".to_owned(),
                });
                out.push(self.finish(FinishReason::Error, status));
            }
            LoopStatus::LimitExceeded { limit, .. } => {
                out.push(UiChunk::Error {
                    error_text: format!("the run exceeded its {} limit", limit.name()),
                });
                out.push(self.finish(FinishReason::Error, status));
            }
        }
        self.ended = true;
    }

    /// A call the run waits on: its tool part (for a sub-agent's call,
    /// which the stream did not show) and, for an approval, the request.
    /// A question is answered as the call's output.
    fn waiting_call(&mut self, pending: &PendingCall, out: &mut Vec<UiChunk>) {
        let call = &pending.call;
        if self.announced.insert(call.id.clone()) {
            out.push(UiChunk::ToolInputAvailable {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                input: call.input.value(),
            });
        }
        if let Wait::Approval { .. } = pending.wait {
            out.push(UiChunk::ToolApprovalRequest {
                approval_id: call.id.clone(),
                tool_call_id: call.id.clone(),
            });
        }
    }

    fn finish(&self, finish_reason: FinishReason, status: &str) -> UiChunk {
        UiChunk::Finish {
            finish_reason,
            message_metadata: Some(json!({
                "status": status,
                "usage": {
                    "inputTokens": self.tokens.input_tokens,
                    "outputTokens": self.tokens.output_tokens,
                    "totalTokens": self.tokens.total_tokens(),
                    "costUsd": self.tokens.cost,
                },
            })),
        }
    }
}
