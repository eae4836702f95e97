//! [`Encoder`]: a run's stored events in, AG-UI events out.
//!
//! Only the root run's events are encoded: a sub-agent's work shows as the
//! tool call that started it and that call's result.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_types::{
    BlockStart, ContentBlock, EventKind, LimitKind, LoopError, LoopEvent, LoopResult, LoopStatus,
    PendingCall, StreamDelta, TokenTotals, Wait,
};
use serde_json::{Map, Value, json};

use crate::event::{AgUiEvent, Interrupt, Outcome};

/// What an open content block of the current turn is, in AG-UI terms.
#[derive(Debug, Clone, PartialEq)]
enum Open {
    Text(String),
    Reasoning(String),
    ToolCall(String),
    /// A block AG-UI has no event for (redacted thinking, a provider's
    /// own block): its deltas are dropped.
    Other,
}

/// Turns one run's events into AG-UI events, in order.
///
/// Start with [`Encoder::start`], pass every event of the run to
/// [`Encoder::encode`], and call [`Encoder::end`] when the stream ends: it
/// closes what is still open and, if the run's result never came, reports
/// the run as failed, so a client always sees a whole run.
#[derive(Debug)]
pub struct Encoder {
    thread_id: String,
    run_id: String,
    /// Model turns begun so far; names steps and message ids.
    turns: u32,
    /// Whether the current turn's step is open.
    in_turn: bool,
    /// The current turn's open blocks, by block index.
    open: BTreeMap<u32, Open>,
    /// Set once `RUN_FINISHED` or `RUN_ERROR` went out.
    ended: bool,
    /// The names of the tools the client runs: a run waiting on their
    /// calls finishes with outcome `success`, leaving the calls to it.
    frontend_tools: BTreeSet<String>,
    /// The state the run shares (see [`Encoder::with_state`]); `None` when
    /// the application's state is no object, so none is sent.
    state: Option<Map<String, Value>>,
    /// The run's tokens and cost so far, for the shared state.
    tokens: TokenTotals,
}

impl Encoder {
    /// An encoder for run `run_id` of conversation `thread_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            turns: 0,
            in_turn: false,
            open: BTreeMap::new(),
            ended: false,
            frontend_tools: BTreeSet::new(),
            state: Some(Map::new()),
            tokens: TokenTotals::default(),
        }
    }

    /// Starts the shared state from the application's (`RunAgentInput`'s
    /// `state`): the run adds its progress under the key `agentloop`
    /// (replacing a value of that key). A state that is no object is the
    /// application's alone: then no state events are sent.
    pub fn with_state(mut self, state: Option<Value>) -> Self {
        self.state = match state {
            None | Some(Value::Null) => Some(Map::new()),
            Some(Value::Object(state)) => Some(state),
            Some(_) => None,
        };
        self
    }

    /// Names the tools the client runs ([`crate::FrontendTool`]): when the
    /// run waits on calls of them only, it finishes with outcome
    /// `success`, and the client answers the calls in its next run.
    pub fn with_frontend_tools(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.frontend_tools = names.into_iter().collect();
        self
    }

    /// The run's first events: `RUN_STARTED`, then the shared state's
    /// `STATE_SNAPSHOT`.
    pub fn start(&self) -> Vec<AgUiEvent> {
        let mut out = vec![AgUiEvent::RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
        }];
        if let Some(state) = &self.state {
            let mut snapshot = state.clone();
            snapshot.insert(
                "agentloop".to_owned(),
                json!({
                    "status": "running",
                    "turn": 0,
                    "agent": Value::Null,
                    "usage": usage(&self.tokens),
                }),
            );
            out.push(AgUiEvent::StateSnapshot {
                snapshot: Value::Object(snapshot),
            });
        }
        out
    }

    /// The AG-UI events `event` stands for; none for an event of a
    /// sub-agent, of token accounting, or after the run ended.
    pub fn encode(&mut self, event: &LoopEvent) -> Vec<AgUiEvent> {
        if self.ended || !event.path.is_root() {
            return Vec::new();
        }
        let mut out = Vec::new();
        match &event.kind {
            EventKind::StreamingStart(start) => {
                self.close_turn(&mut out);
                self.turns += 1;
                self.in_turn = true;
                out.push(AgUiEvent::StepStarted {
                    step_name: self.step_name(),
                });
                let mut changes = vec![("turn", json!(start.iteration))];
                if let Some(agent) = &start.agent {
                    changes.push(("agent", json!(agent)));
                }
                self.state_delta(changes, &mut out);
            }
            EventKind::StreamingChunk(chunk) => self.delta(&chunk.delta, &mut out),
            EventKind::StreamingEnd(_) => self.close_turn(&mut out),
            EventKind::MessageCreated(created) => {
                for block in &created.message.content {
                    if let ContentBlock::ToolResult(result) = block {
                        out.push(AgUiEvent::ToolCallResult {
                            message_id: format!("{}.{}", created.message.id, result.tool_use_id),
                            tool_call_id: result.tool_use_id.clone(),
                            content: result.content.clone(),
                            role: "tool",
                        });
                    }
                }
            }
            EventKind::Finished(finished) => {
                self.close_turn(&mut out);
                let status = json!(finished.result.status.name());
                self.state_delta(vec![("status", status)], &mut out);
                out.push(self.finished(&finished.result));
                self.ended = true;
            }
            EventKind::TokensConsumed(consumed) => {
                self.tokens += consumed.tokens;
                let usage = usage(&self.tokens);
                self.state_delta(vec![("usage", usage)], &mut out);
            }
            EventKind::Handoff(handoff) => {
                out.push(custom(event));
                self.state_delta(vec![("agent", json!(handoff.to))], &mut out);
            }
            EventKind::FirstChunk => {}
            // The tool's life after the model wrote the call, strategy
            // events, hooks, compaction, approvals (sent as the finished
            // run's interrupts): kept whole for clients that want them.
            EventKind::PendingToolResult(_)
            | EventKind::ToolStart(_)
            | EventKind::ToolBlockUpdate(_)
            | EventKind::ToolEnd(_)
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
            | EventKind::Hook(_) => out.push(custom(event)),
        }
        out
    }

    /// Closes what is open and, when the run's result never came (the
    /// stream broke), ends the run with `RUN_ERROR`.
    pub fn end(&mut self) -> Vec<AgUiEvent> {
        if self.ended {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.close_turn(&mut out);
        out.push(AgUiEvent::RunError {
            message: "the run's event stream ended before its result".to_owned(),
            code: "stream_ended".to_owned(),
        });
        self.ended = true;
        out
    }

    /// A `STATE_DELTA` replacing these keys of the run's progress.
    fn state_delta(&self, changes: Vec<(&str, Value)>, out: &mut Vec<AgUiEvent>) {
        if self.state.is_none() {
            return;
        }
        let delta = changes
            .into_iter()
            .map(|(key, value)| {
                json!({ "op": "replace", "path": format!("/agentloop/{key}"), "value": value })
            })
            .collect();
        out.push(AgUiEvent::StateDelta { delta });
    }

    fn step_name(&self) -> String {
        format!("turn {}", self.turns)
    }

    fn block_id(&self, index: u32) -> String {
        format!("{}.{}.{}", self.run_id, self.turns, index)
    }

    fn delta(&mut self, delta: &StreamDelta, out: &mut Vec<AgUiEvent>) {
        if !self.in_turn {
            // A delta outside a turn cannot be placed; the engine never
            // sends one.
            return;
        }
        match delta {
            StreamDelta::BlockStart { index, block } => {
                self.close_block(*index, out);
                let open = match block {
                    BlockStart::Text => {
                        let message_id = self.block_id(*index);
                        out.push(AgUiEvent::TextMessageStart {
                            message_id: message_id.clone(),
                            role: "assistant",
                        });
                        Open::Text(message_id)
                    }
                    BlockStart::Thinking => {
                        let message_id = self.block_id(*index);
                        out.push(AgUiEvent::ReasoningStart {
                            message_id: message_id.clone(),
                        });
                        out.push(AgUiEvent::ReasoningMessageStart {
                            message_id: message_id.clone(),
                            role: "reasoning",
                        });
                        Open::Reasoning(message_id)
                    }
                    BlockStart::ToolUse { id, name } => {
                        out.push(AgUiEvent::ToolCallStart {
                            tool_call_id: id.clone(),
                            tool_call_name: name.clone(),
                        });
                        Open::ToolCall(id.clone())
                    }
                    BlockStart::RedactedThinking { .. } | BlockStart::Provider { .. } => {
                        Open::Other
                    }
                };
                self.open.insert(*index, open);
            }
            StreamDelta::Text { index, text } => {
                if let (Some(Open::Text(message_id)), false) =
                    (self.open.get(index), text.is_empty())
                {
                    out.push(AgUiEvent::TextMessageContent {
                        message_id: message_id.clone(),
                        delta: text.clone(),
                    });
                }
            }
            StreamDelta::Thinking { index, thinking } => {
                if let (Some(Open::Reasoning(message_id)), false) =
                    (self.open.get(index), thinking.is_empty())
                {
                    out.push(AgUiEvent::ReasoningMessageContent {
                        message_id: message_id.clone(),
                        delta: thinking.clone(),
                    });
                }
            }
            StreamDelta::ToolInput {
                index,
                partial_json,
            } => {
                if let (Some(Open::ToolCall(tool_call_id)), false) =
                    (self.open.get(index), partial_json.is_empty())
                {
                    out.push(AgUiEvent::ToolCallArgs {
                        tool_call_id: tool_call_id.clone(),
                        delta: partial_json.clone(),
                    });
                }
            }
            StreamDelta::BlockStop { index } => self.close_block(*index, out),
            // Signatures authenticate thinking to its provider; citations
            // annotate text already sent. Neither has an AG-UI event.
            StreamDelta::Signature { .. } | StreamDelta::Citation { .. } => {}
        }
    }

    fn close_block(&mut self, index: u32, out: &mut Vec<AgUiEvent>) {
        match self.open.remove(&index) {
            Some(Open::Text(message_id)) => out.push(AgUiEvent::TextMessageEnd { message_id }),
            Some(Open::Reasoning(message_id)) => {
                out.push(AgUiEvent::ReasoningMessageEnd {
                    message_id: message_id.clone(),
                });
                out.push(AgUiEvent::ReasoningEnd { message_id });
            }
            Some(Open::ToolCall(tool_call_id)) => {
                out.push(AgUiEvent::ToolCallEnd { tool_call_id });
            }
            Some(Open::Other) | None => {}
        }
    }

    /// Closes the current turn: its blocks left open (a stream cut short)
    /// and its step.
    fn close_turn(&mut self, out: &mut Vec<AgUiEvent>) {
        let indexes: Vec<u32> = self.open.keys().copied().collect();
        for index in indexes {
            self.close_block(index, out);
        }
        if self.in_turn {
            self.in_turn = false;
            out.push(AgUiEvent::StepFinished {
                step_name: self.step_name(),
            });
        }
    }

    fn finished(&self, result: &LoopResult) -> AgUiEvent {
        let finished = |result: Option<Value>, outcome| AgUiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            result,
            outcome,
        };
        match &result.status {
            LoopStatus::Complete {
                return_value,
                output,
            } => finished(
                output.clone().or_else(|| return_value.clone()),
                Outcome::Success {
                    pending_tool_call_ids: Vec::new(),
                },
            ),
            LoopStatus::Suspended { pending, .. } if !pending.is_empty() => {
                let (frontend, people): (Vec<&PendingCall>, Vec<&PendingCall>) =
                    pending.iter().partition(|call| {
                        call.path.is_root() && self.frontend_tools.contains(&call.call.name)
                    });
                if people.is_empty() {
                    // Only the client's own tools are waited on: it runs
                    // them from the calls it was sent.
                    let pending_tool_call_ids =
                        frontend.iter().map(|call| call.call.id.clone()).collect();
                    finished(
                        None,
                        Outcome::Success {
                            pending_tool_call_ids,
                        },
                    )
                } else {
                    let interrupts = people.into_iter().map(interrupt).collect();
                    finished(None, Outcome::Interrupt { interrupts })
                }
            }
            LoopStatus::Suspended { .. } => AgUiEvent::RunError {
                message: "the run suspended with no call waiting".to_owned(),
                code: "suspended".to_owned(),
            },
            LoopStatus::Cancelled => finished(None, Outcome::Cancelled),
            LoopStatus::Error { error } => AgUiEvent::RunError {
                message: error.to_string(),
                code: error_code(error),
            },
            LoopStatus::MaxIterations => AgUiEvent::RunError {
                message: "the run reached its limit of model turns".to_owned(),
                code: "max_iterations".to_owned(),
            },
            LoopStatus::LimitExceeded { limit, .. } => AgUiEvent::RunError {
                message: format!("the run exceeded its {} limit", limit_name(limit)),
                code: "limit_exceeded".to_owned(),
            },
        }
    }
}

/// The error's kind as agentloop serializes it (`provider`, `tool`, …).
fn error_code(error: &LoopError) -> String {
    serde_json::to_value(error)
        .ok()
        .and_then(|value| value.get("kind")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "error".to_owned())
}

fn limit_name(limit: &LimitKind) -> &'static str {
    match limit {
        LimitKind::Requests => "request",
        LimitKind::ToolCalls => "tool call",
        LimitKind::TotalTokens => "token",
        LimitKind::Cost => "cost",
        LimitKind::Timeout => "time",
        LimitKind::Handoffs => "handoff",
        LimitKind::Budget => "budget",
    }
}

fn interrupt(pending: &PendingCall) -> Interrupt {
    let (reason, message, response_schema) = match &pending.wait {
        Wait::Approval { reason } => (
            "tool_approval",
            reason.clone(),
            json!({
                "type": "object",
                "properties": {
                    "approved": { "type": "boolean" },
                    "arguments": { "type": "object" }
                },
                "required": ["approved"]
            }),
        ),
        Wait::Question { question } => (
            "question",
            question.clone(),
            json!({
                "type": "object",
                "properties": { "answer": { "type": "string" } },
                "required": ["answer"]
            }),
        ),
    };
    Interrupt {
        id: pending.call.id.clone(),
        reason,
        message,
        tool_call_id: pending.call.id.clone(),
        response_schema,
    }
}

/// The run's tokens and cost as the shared state shows them.
fn usage(tokens: &TokenTotals) -> Value {
    json!({
        "inputTokens": tokens.input_tokens,
        "outputTokens": tokens.output_tokens,
        "totalTokens": tokens.total_tokens(),
        "costUsd": tokens.cost,
    })
}

/// `event` whole, as a `CUSTOM` event named after its kind.
fn custom(event: &LoopEvent) -> AgUiEvent {
    AgUiEvent::Custom {
        name: format!("agentloop.{}", event.kind.name()),
        value: serde_json::to_value(event).unwrap_or(Value::Null),
    }
}
