//! Running the calls of one turn: concurrently up to the cap, alone where a
//! tool asks for it, with progress interleaved and outcomes reported per
//! call. The machine commits them in call order; calls it answered itself
//! start and end like any other, without running anything.

use agentloop_types::ContextCompactedEvent;
use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, FinishedEvent, MessageCreatedEvent, PendingToolResultEvent,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
use std::sync::Arc;
use std::time::Duration;

use agentloop_types::{
    Budget, CancellationToken, EventKind, LoopEvent, LoopOptions, RunPath, TokenTotals, Tool,
    ToolContext, ToolStreamEvent,
};
use futures::StreamExt;
use futures::future::Either;
use futures::stream;

use crate::cancel::or_cancelled;
use crate::clock::Clock;
use crate::machine::{Input, ToolCall, ToolOutcome, running_block};
use crate::run_stream::Emitter;
use crate::tool_call::{CallItem, CallStream};

/// What every call of a run shares.
pub(crate) struct ToolRun<'a> {
    /// Every tool of the run, found by name.
    pub(crate) tools: &'a [Arc<dyn Tool>],
    pub(crate) options: &'a LoopOptions,
    pub(crate) run_id: &'a str,
    pub(crate) cancel: &'a CancellationToken,
    /// The run's budget, handed to each call (see [`ToolContext::budget`]).
    pub(crate) budget: Option<&'a Arc<dyn Budget>>,
    /// The run's clock: each call's `tool_end` says how long it took.
    pub(crate) clock: &'a dyn Clock,
}

impl ToolRun<'_> {
    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    fn is_skill(&self, planned: &ToolCall) -> bool {
        self.find(&planned.call.name).is_some_and(|t| t.is_skill())
    }

    /// Runs `calls` and reports their outcomes, or the cancel.
    pub(crate) async fn run(&self, mut calls: Vec<ToolCall>, emitter: &mut Emitter) -> Input {
        let mut finished: Vec<(String, ToolOutcome)> = Vec::with_capacity(calls.len());
        let mut child_tokens = TokenTotals::default();
        let mut start = 0;
        while start < calls.len() {
            let end = start + batch_len(&calls[start..], |c| c.alone);
            let completed = self
                .run_batch(
                    &mut calls[start..end],
                    emitter,
                    &mut finished,
                    &mut child_tokens,
                )
                .await;
            start = end;
            if !completed {
                return Input::Cancelled {
                    partial_turn: None,
                    finished_tools: finished,
                    child_tokens,
                };
            }
        }
        Input::ToolsDone {
            results: finished,
            child_tokens,
        }
    }

    /// Runs one batch; false when cancelled part-way. What a call's last
    /// event carries is moved out of it, not copied: the call is done with.
    async fn run_batch(
        &self,
        batch: &mut [ToolCall],
        emitter: &mut Emitter,
        finished: &mut Vec<(String, ToolOutcome)>,
        child_tokens: &mut TokenTotals,
    ) -> bool {
        let timeout = self.options.tool_timeout_ms.map(Duration::from_millis);
        let start = |index: usize, planned: &ToolCall| {
            let call = &planned.call;
            let context = ToolContext {
                run_id: self.run_id.to_owned(),
                project_id: self.options.project_id.clone(),
                chat_id: self.options.chat_id.clone(),
                tool_use_id: call.id.clone(),
                path: RunPath::root(),
                options: Default::default(),
                cancel: self.cancel.child_token(),
                resume: planned.resume.clone(),
                budget: self.budget.cloned(),
            };
            CallStream::start(planned, self.find(&call.name), context, timeout)
                .map(move |item| (index, item))
        };
        // One call needs no merging: reading it in place spares the
        // unordered set's allocations and wakers on every tool step.
        let mut merged = match &*batch {
            [only] => Either::Left(start(0, only)),
            _ => {
                let streams: Vec<_> = batch
                    .iter()
                    .enumerate()
                    .map(|(index, planned)| start(index, planned))
                    .collect();
                Either::Right(
                    stream::iter(streams).flatten_unordered(self.options.tool_concurrency.max(1)),
                )
            }
        };
        // When each call started, by its place in the batch.
        let mut started = vec![Duration::ZERO; batch.len()];
        loop {
            let Some(next) = or_cancelled(self.cancel, merged.next()).await else {
                return false;
            };
            let Some((index, item)) = next else {
                return true;
            };
            let planned = &mut batch[index];
            let is_skill = self.is_skill(planned);
            let call = &mut planned.call;
            match item {
                CallItem::Started => {
                    started[index] = self.clock.since_epoch();
                    emitter
                        .emit(EventKind::ToolStart(ToolStartEvent {
                            tool_use_id: call.id.clone(),
                            name: call.name.clone(),
                            // The tool has its own copy.
                            input: std::mem::take(&mut call.input),
                            is_skill,
                            depth: 1,
                        }))
                        .await
                }
                CallItem::Event(ToolStreamEvent::GroupsUpdate { groups }) => {
                    emitter
                        .emit(EventKind::ToolBlockUpdate(ToolBlockUpdateEvent {
                            tool_use_id: call.id.clone(),
                            block: Box::new(running_block(call, groups)),
                        }))
                        .await
                }
                CallItem::Event(ToolStreamEvent::ChildEvent(event)) => {
                    let LoopEvent { path, kind, .. } = *event;
                    if let EventKind::TokensConsumed(TokensConsumedEvent { tokens }) = &kind {
                        *child_tokens += *tokens;
                    }
                    let path = path.under(&RunPath::root().child(&call.id));
                    emitter.emit_at(path, deepen(kind)).await
                }
                CallItem::Done(outcome) => {
                    let took = self.clock.since_epoch().saturating_sub(started[index]);
                    emitter
                        .emit(EventKind::ToolEnd(ToolEndEvent {
                            tool_use_id: call.id.clone(),
                            name: std::mem::take(&mut call.name),
                            is_error: outcome.is_error(),
                            is_skill,
                            depth: 1,
                            duration_ms: Some(u32::try_from(took.as_millis()).unwrap_or(u32::MAX)),
                        }))
                        .await;
                    finished.push((std::mem::take(&mut call.id), outcome));
                }
            }
        }
    }
}

/// Tool events of a child run count their depth from the child; one level
/// is added per forwarding.
fn deepen(kind: EventKind) -> EventKind {
    match kind {
        EventKind::ToolStart(ToolStartEvent {
            tool_use_id,
            name,
            input,
            is_skill,
            depth,
        }) => EventKind::ToolStart(ToolStartEvent {
            tool_use_id,
            name,
            input,
            is_skill,
            depth: depth + 1,
        }),
        EventKind::ToolEnd(ToolEndEvent {
            tool_use_id,
            name,
            is_error,
            is_skill,
            depth,
            duration_ms,
        }) => EventKind::ToolEnd(ToolEndEvent {
            tool_use_id,
            name,
            is_error,
            is_skill,
            depth: depth + 1,
            duration_ms,
        }),
        kind @ (EventKind::StreamingStart(StreamingStartEvent { .. })
        | EventKind::FirstChunk
        | EventKind::StreamingChunk(StreamingChunkEvent { .. })
        | EventKind::StreamingEnd(StreamingEndEvent { .. })
        | EventKind::MessageCreated(MessageCreatedEvent { .. })
        | EventKind::TokensConsumed(TokensConsumedEvent { .. })
        | EventKind::PendingToolResult(PendingToolResultEvent { .. })
        | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
        | EventKind::AgentStart(AgentStartEvent { .. })
        | EventKind::AgentTurnStart(AgentTurnStartEvent { .. })
        | EventKind::AgentReason(AgentReasonEvent { .. })
        | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
        | EventKind::AgentToolStart(AgentToolStartEvent { .. })
        | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
        | EventKind::AgentObserve(AgentObserveEvent { .. })
        | EventKind::AgentCompletion(AgentCompletionEvent { .. })
        | EventKind::AgentError(AgentErrorEvent { .. })
        | EventKind::ApprovalRequested(_)
        | EventKind::ContextCompacted(ContextCompactedEvent { .. })
        | EventKind::ContextEdited(_)
        | EventKind::Hook(_)
        | EventKind::Handoff(_)
        | EventKind::Finished(FinishedEvent { .. })) => kind,
    }
}

/// How many calls, from the first, may run together: a run of calls that
/// may share the turn, or one call that must run alone.
fn batch_len<T>(calls: &[T], runs_alone: impl Fn(&T) -> bool) -> usize {
    match calls.iter().position(&runs_alone) {
        Some(0) => 1,
        Some(alone) => alone,
        None => calls.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::ToolUseBlock;

    fn call(id: &str) -> ToolUseBlock {
        ToolUseBlock {
            id: id.into(),
            name: id.trim_end_matches(char::is_numeric).into(),
            input: serde_json::json!({}).into(),
        }
    }

    #[test]
    fn alone_calls_split_batches_in_order() {
        let calls: Vec<_> = ["a1", "a2", "solo3", "a4", "solo5", "solo6"]
            .iter()
            .map(|id| call(id))
            .collect();
        let mut ids: Vec<Vec<&str>> = Vec::new();
        let mut rest = &calls[..];
        while !rest.is_empty() {
            let (batch, after) = rest.split_at(batch_len(rest, |c| c.name == "solo"));
            ids.push(batch.iter().map(|c| c.id.as_str()).collect());
            rest = after;
        }
        assert_eq!(
            ids,
            vec![
                vec!["a1", "a2"],
                vec!["solo3"],
                vec!["a4"],
                vec!["solo5"],
                vec!["solo6"]
            ]
        );
    }
}
