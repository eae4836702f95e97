//! The loop as a pure step machine: `step(state, input) -> (state, outputs)`.
//!
//! It decides what happens next — call the model, run these tools, finish
//! with this result — and which events that produces. It does no I/O and
//! reads no clock or randomness, so every decision is deterministic and the
//! state ([`RunState`]) can be stored and resumed anywhere.

use agentloop_types::{
    BreakLoop, ContentBlock, EventKind, LimitKind, LoopError, LoopOptions, LoopResult, LoopStatus,
    Message, RUN_STATE_SCHEMA_VERSION, RenderingBlockGroup, Role, RunPhase, RunState, StopReason,
    TokenTotals, ToolResult, ToolResultBlock, ToolResultRenderBlock, ToolResultStatus,
    ToolUseBlock, UsageLimits, validate_history,
};

/// What the driver reports back to the machine.
#[derive(Debug, Clone)]
pub enum Input {
    /// Begin (or resume from a stored state).
    Start,
    /// A model turn finished.
    ModelTurn {
        /// The assembled assistant content.
        content: Vec<ContentBlock>,
        /// Why it ended.
        stop_reason: StopReason,
        /// Its tokens and cost.
        usage: TokenTotals,
    },
    /// The model request failed.
    ModelFailed {
        /// Why.
        error: LoopError,
    },
    /// Every call of a [`Step::RunTools`] finished.
    ToolsDone {
        /// One result per call id, in any order.
        results: Vec<(String, ToolResult)>,
        /// Tokens spent by child runs the tools drove.
        child_tokens: TokenTotals,
    },
    /// The caller cancelled.
    Cancelled {
        /// The assistant content streamed before the cancel, if a model turn
        /// was in flight.
        partial_turn: Option<Vec<ContentBlock>>,
        /// Results of calls that finished before the cancel.
        finished_tools: Vec<(String, ToolResult)>,
        /// Tokens spent by child runs before the cancel.
        child_tokens: TokenTotals,
    },
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Request a model turn with these messages.
    CallModel {
        /// 1-based turn number.
        iteration: u32,
        /// The history to send (thinking trimmed per `thinking_keep_turns`).
        messages: Vec<Message>,
    },
    /// Run these calls; report with [`Input::ToolsDone`].
    RunTools {
        /// The calls, in call order.
        calls: Vec<ToolUseBlock>,
    },
    /// The run is over; the last event was `finished`.
    Done,
}

/// Events to emit, then the next step.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Events, in order.
    pub events: Vec<EventKind>,
    /// What to do next.
    pub next: Step,
}

/// The loop's decision logic over a [`RunState`].
#[derive(Debug, Clone)]
pub struct Machine {
    state: RunState,
    options: LoopOptions,
}

impl Machine {
    /// A machine for `state` under `options`.
    pub fn new(state: RunState, options: LoopOptions) -> Self {
        Self { state, options }
    }

    /// The current state, for storing.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Advances the machine by one input.
    pub fn step(&mut self, input: Input) -> Output {
        let mut events = Vec::new();
        let next = match input {
            Input::Start => self.start(&mut events),
            Input::ModelTurn {
                content,
                stop_reason,
                usage,
            } => self.model_turn(content, stop_reason, usage, &mut events),
            Input::ModelFailed { error } => self.finish(LoopStatus::Error { error }, &mut events),
            Input::ToolsDone {
                results,
                child_tokens,
            } => {
                self.state.totals += child_tokens;
                self.tools_done(results, &mut events)
            }
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            } => {
                self.state.totals += child_tokens;
                self.cancelled(partial_turn, finished_tools, &mut events)
            }
        };
        Output { events, next }
    }

    fn start(&mut self, events: &mut Vec<EventKind>) -> Step {
        if self.state.schema_version != RUN_STATE_SCHEMA_VERSION {
            let error = LoopError::UnsupportedState {
                found: self.state.schema_version,
                expected: RUN_STATE_SCHEMA_VERSION,
            };
            return self.finish(LoopStatus::Error { error }, events);
        }
        match &self.state.phase {
            RunPhase::RunTools { calls, .. } => {
                let calls = calls.clone();
                self.pending_tools(calls, events)
            }
            RunPhase::CallModel | RunPhase::Finished => self.call_model(events),
        }
    }

    fn call_model(&mut self, events: &mut Vec<EventKind>) -> Step {
        self.state.phase = RunPhase::CallModel;
        if self.state.iteration >= self.options.max_iterations {
            return self.finish(LoopStatus::MaxIterations, events);
        }
        if let Some(limit) = exceeded_limit(
            &self.options.limits,
            self.state.iteration,
            &self.state.totals,
        ) {
            return self.finish(LoopStatus::LimitExceeded { limit }, events);
        }
        if let Err(error) = validate_history(&self.state.messages, false) {
            let error = LoopError::InvalidHistory { error };
            return self.finish(LoopStatus::Error { error }, events);
        }
        self.state.iteration += 1;
        Step::CallModel {
            iteration: self.state.iteration,
            messages: trim_thinking(&self.state.messages, self.options.thinking_keep_turns),
        }
    }

    fn model_turn(
        &mut self,
        content: Vec<ContentBlock>,
        stop_reason: StopReason,
        usage: TokenTotals,
        events: &mut Vec<EventKind>,
    ) -> Step {
        self.state.totals += usage;
        let calls = tool_calls(&content);
        if !content.is_empty() {
            let message = Message::new(self.next_message_id(), Role::Assistant, content);
            self.commit(message, events);
        }
        events.push(EventKind::TokensConsumed { tokens: usage });

        if calls.is_empty() {
            return match stop_reason {
                // The provider paused a long server-side turn: send the
                // history back unchanged to let it continue.
                StopReason::PauseTurn => self.call_model(events),
                _ => self.finish(LoopStatus::Complete { return_value: None }, events),
            };
        }
        let allowed = self
            .options
            .limits
            .max_tool_calls
            .map(|max| max.saturating_sub(self.state.tool_calls));
        if allowed.is_some_and(|allowed| (calls.len() as u64) > u64::from(allowed)) {
            let results = calls
                .iter()
                .map(|call| {
                    ToolResultBlock::error(
                        &call.id,
                        "Not run: the run reached its tool call limit.",
                    )
                })
                .collect();
            let id = self.next_message_id();
            self.commit_results(id, results, events);
            return self.finish(
                LoopStatus::LimitExceeded {
                    limit: LimitKind::ToolCalls,
                },
                events,
            );
        }
        self.state.tool_calls += calls.len() as u32;
        self.pending_tools(calls, events)
    }

    fn pending_tools(&mut self, calls: Vec<ToolUseBlock>, events: &mut Vec<EventKind>) -> Step {
        let result_message_id = match &self.state.phase {
            RunPhase::RunTools {
                result_message_id, ..
            } => result_message_id.clone(),
            _ => self.next_message_id(),
        };
        let blocks = calls
            .iter()
            .map(|call| running_block(call, Vec::new()))
            .collect();
        events.push(EventKind::PendingToolResult {
            message_id: result_message_id.clone(),
            blocks,
        });
        self.state.phase = RunPhase::RunTools {
            result_message_id,
            calls: calls.clone(),
        };
        Step::RunTools { calls }
    }

    fn tools_done(
        &mut self,
        mut results: Vec<(String, ToolResult)>,
        events: &mut Vec<EventKind>,
    ) -> Step {
        let RunPhase::RunTools {
            result_message_id,
            calls,
        } = std::mem::replace(&mut self.state.phase, RunPhase::CallModel)
        else {
            // Tool results with no tools pending: nothing to commit.
            return self.call_model(events);
        };
        let mut ordered: Vec<(ToolUseBlock, ToolResult)> = calls
            .into_iter()
            .map(|call| {
                let result = match results.iter().position(|(id, _)| *id == call.id) {
                    Some(pos) => results.swap_remove(pos).1,
                    None => ToolResult::error("The tool ended without a result."),
                };
                (call, result)
            })
            .collect();

        let first_break = ordered
            .iter()
            .position(|(_, result)| result.break_loop.is_some());
        if let Some(index) = first_break
            && matches!(ordered[index].1.break_loop, Some(BreakLoop::Suspend))
        {
            let (pending_tool_call, pending) = ordered.remove(index);
            let other_tool_results = ordered
                .into_iter()
                .map(|(call, result)| result_block(&call, result, &pending_tool_call))
                .collect();
            return self.finish(
                LoopStatus::Suspended {
                    pending_tool_call,
                    reason: pending.content,
                    other_tool_results,
                },
                events,
            );
        }
        let return_value = first_break.and_then(|index| match &ordered[index].1.break_loop {
            Some(BreakLoop::Return { value }) => Some(value.clone()),
            _ => None,
        });
        let blocks = ordered
            .into_iter()
            .map(|(call, result)| committed_block(&call.id, result))
            .collect();
        self.commit_results(result_message_id, blocks, events);
        match return_value {
            Some(value) => self.finish(
                LoopStatus::Complete {
                    return_value: Some(value),
                },
                events,
            ),
            None => self.call_model(events),
        }
    }

    fn cancelled(
        &mut self,
        partial_turn: Option<Vec<ContentBlock>>,
        mut finished_tools: Vec<(String, ToolResult)>,
        events: &mut Vec<EventKind>,
    ) -> Step {
        const NOT_RUN: &str = "Cancelled before the tool ran.";
        match std::mem::replace(&mut self.state.phase, RunPhase::Finished) {
            RunPhase::RunTools {
                result_message_id,
                calls,
            } => {
                let blocks = calls
                    .iter()
                    .map(
                        |call| match finished_tools.iter().position(|(id, _)| *id == call.id) {
                            Some(pos) => {
                                committed_block(&call.id, finished_tools.swap_remove(pos).1)
                            }
                            None => ToolResultBlock::error(&call.id, "Cancelled while running."),
                        },
                    )
                    .collect();
                self.commit_results(result_message_id, blocks, events);
            }
            RunPhase::CallModel | RunPhase::Finished => {
                if let Some(content) = partial_turn.filter(|c| !c.is_empty()) {
                    let message = Message::new(self.next_message_id(), Role::Assistant, content);
                    let results: Vec<ToolResultBlock> = message
                        .tool_uses()
                        .map(|call| ToolResultBlock::error(&call.id, NOT_RUN))
                        .collect();
                    self.commit(message, events);
                    if !results.is_empty() {
                        let id = self.next_message_id();
                        self.commit_results(id, results, events);
                    }
                }
            }
        }
        self.finish(LoopStatus::Cancelled, events)
    }

    fn commit_results(
        &mut self,
        id: String,
        results: Vec<ToolResultBlock>,
        events: &mut Vec<EventKind>,
    ) {
        let content = results.into_iter().map(ContentBlock::ToolResult).collect();
        self.commit(Message::new(id, Role::User, content), events);
    }

    fn commit(&mut self, message: Message, events: &mut Vec<EventKind>) {
        self.state.messages.push(message.clone());
        events.push(EventKind::MessageCreated { message });
    }

    fn finish(&mut self, status: LoopStatus, events: &mut Vec<EventKind>) -> Step {
        self.state.phase = RunPhase::Finished;
        events.push(EventKind::Finished {
            result: LoopResult {
                status,
                messages: self.state.messages.clone(),
                tokens: self.state.totals,
            },
        });
        Step::Done
    }

    fn next_message_id(&mut self) -> String {
        self.state.created_messages += 1;
        format!("{}-{}", self.state.run_id, self.state.created_messages)
    }
}

/// A result of the turn that suspended, for `other_tool_results`: a second
/// suspending call is answered with an error naming the call that won.
fn result_block(
    call: &ToolUseBlock,
    result: ToolResult,
    pending: &ToolUseBlock,
) -> ToolResultBlock {
    if matches!(result.break_loop, Some(BreakLoop::Suspend)) {
        return ToolResultBlock::error(
            &call.id,
            format!(
                "Not answered: the run suspended for call {} first. The tool asked: {}",
                pending.id, result.content
            ),
        );
    }
    committed_block(&call.id, result)
}

/// The block committed to the history for `result` of call `call_id`.
pub(crate) fn committed_block(call_id: &str, result: ToolResult) -> ToolResultBlock {
    ToolResultBlock {
        tool_use_id: call_id.to_owned(),
        content: result.content,
        is_error: result.is_error,
        rendering_groups: result.rendering_groups,
    }
}

/// The render block of a call still running, showing `rendering_groups`.
pub(crate) fn running_block(
    call: &ToolUseBlock,
    rendering_groups: Vec<RenderingBlockGroup>,
) -> ToolResultRenderBlock {
    ToolResultRenderBlock {
        name: call.name.clone(),
        tool_use_id: call.id.clone(),
        content: String::new(),
        is_error: false,
        status: ToolResultStatus::Running,
        rendered_content: None,
        icon: None,
        rendering_groups,
    }
}

/// The tool calls of an assistant turn, in call order.
pub(crate) fn tool_calls(content: &[ContentBlock]) -> Vec<ToolUseBlock> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

/// The usage limit reached after `requests` model calls spending `totals`,
/// if any; checked before each model call.
pub(crate) fn exceeded_limit(
    limits: &UsageLimits,
    requests: u32,
    totals: &TokenTotals,
) -> Option<LimitKind> {
    if limits.max_requests.is_some_and(|max| requests >= max) {
        return Some(LimitKind::Requests);
    }
    if limits
        .max_total_tokens
        .is_some_and(|max| totals.total_tokens() >= max)
    {
        return Some(LimitKind::TotalTokens);
    }
    if limits.max_cost.is_some_and(|max| totals.cost >= max) {
        return Some(LimitKind::Cost);
    }
    None
}

/// Leaves thinking out of all but the last `keep` assistant messages.
fn trim_thinking(messages: &[Message], keep: Option<u32>) -> Vec<Message> {
    let Some(keep) = keep else {
        return messages.to_vec();
    };
    let assistant_turns = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let trim_before = assistant_turns.saturating_sub(keep as usize);
    let mut seen = 0;
    messages
        .iter()
        .map(|message| {
            if message.role != Role::Assistant {
                return message.clone();
            }
            seen += 1;
            if seen > trim_before {
                return message.clone();
            }
            let content = message
                .content
                .iter()
                .filter(|b| {
                    !matches!(
                        b,
                        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
                    )
                })
                .cloned()
                .collect();
            Message::new(message.id.clone(), Role::Assistant, content)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thinking_turn(id: &str) -> Message {
        Message::new(
            id,
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: format!("thought {id}"),
                    signature: Some("sig".into()),
                },
                ContentBlock::text(format!("answer {id}")),
            ],
        )
    }

    #[test]
    fn thinking_is_trimmed_from_requests_only() {
        let messages = vec![
            Message::user_text("u1", "q1"),
            thinking_turn("a1"),
            Message::user_text("u2", "q2"),
            thinking_turn("a2"),
            Message::user_text("u3", "q3"),
        ];
        let trimmed = trim_thinking(&messages, Some(1));
        assert_eq!(trimmed[1].content.len(), 1, "old thinking left out");
        assert_eq!(trimmed[3].content.len(), 2, "latest thinking kept");
        assert_eq!(trim_thinking(&messages, None), messages);
        assert!(
            trim_thinking(&messages, Some(0))
                .iter()
                .all(|m| m.content.len() == 1)
        );

        let mut machine = Machine::new(
            RunState::new("r", messages.clone()),
            LoopOptions {
                thinking_keep_turns: Some(1),
                ..LoopOptions::default()
            },
        );
        let Step::CallModel { messages: sent, .. } = machine.step(Input::Start).next else {
            panic!("expected a model call");
        };
        assert_eq!(sent, trimmed);
        assert_eq!(machine.state().messages, messages, "history keeps thinking");
    }

    #[test]
    fn unsupported_schema_is_an_error_result() {
        let mut state = RunState::new("r", vec![Message::user_text("u", "hi")]);
        state.schema_version = 999;
        let mut machine = Machine::new(state, LoopOptions::default());
        let out = machine.step(Input::Start);
        assert_eq!(out.next, Step::Done);
        assert!(matches!(
            &out.events[..],
            [EventKind::Finished { result }] if matches!(result.status, LoopStatus::Error { error: LoopError::UnsupportedState { found: 999, .. } })
        ));
    }

    #[test]
    fn state_round_trips_through_json_mid_run() {
        let mut machine = Machine::new(
            RunState::new("r", vec![Message::user_text("u", "hi")]),
            LoopOptions::default(),
        );
        machine.step(Input::Start);
        machine.step(Input::ModelTurn {
            content: vec![ContentBlock::ToolUse(ToolUseBlock {
                id: "t1".into(),
                name: "echo".into(),
                input: serde_json::json!({}),
            })],
            stop_reason: StopReason::ToolUse,
            usage: TokenTotals::default(),
        });
        let json = serde_json::to_string(machine.state()).unwrap();
        let restored: RunState = serde_json::from_str(&json).unwrap();
        assert_eq!(&restored, machine.state());
        // A restored machine picks up where the stored one stopped: the
        // pending calls run again under the same result message id.
        let mut resumed = Machine::new(restored, LoopOptions::default());
        let out = resumed.step(Input::Start);
        assert!(matches!(out.next, Step::RunTools { ref calls } if calls.len() == 1));
        assert!(matches!(
            &out.events[..],
            [EventKind::PendingToolResult { message_id, .. }] if message_id == "r-2"
        ));
    }
}
