//! One tool call as a well-behaved stream: it starts, reports progress and
//! yields exactly one outcome, whatever the tool does — panics, ends without
//! a result, or overruns its time limit. The machine words what the model
//! reads for each ([`ToolOutcome`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agentloop_types::{
    CancellationToken, Tool, ToolContext, ToolOutput, ToolStream, ToolStreamEvent,
};
use futures::{Future, Stream, StreamExt};

use crate::machine::{ToolCall, ToolOutcome};

/// What a call stream yields.
pub(crate) enum CallItem {
    /// First item: the call starts now.
    Started,
    /// Progress.
    Event(ToolStreamEvent),
    /// Last item.
    Done(ToolOutcome),
}

/// Stream of one call; see the module docs.
pub(crate) struct CallStream {
    inner: Option<ToolStream>,
    /// The outcome, when known without running the tool.
    answered: Immediate,
    started: bool,
    timeout: Option<Duration>,
    /// Armed when the call starts (first polled), not when it is created:
    /// calls queued behind `tool_concurrency` get their whole time too.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    cancel: CancellationToken,
    /// The call's span (OpenTelemetry GenAI `execute_tool`); the tool runs
    /// inside it, so a child run it starts nests under it.
    span: tracing::Span,
}

impl CallStream {
    /// Starts `planned` on `tool` (`None` when no tool has its name), or
    /// yields the machine's answer when it has one.
    pub(crate) fn start(
        planned: &ToolCall,
        tool: Option<&Arc<dyn Tool>>,
        mut context: ToolContext,
        timeout: Option<Duration>,
    ) -> Self {
        let cancel = context.cancel.clone();
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format!("execute_tool {}", planned.call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %planned.call.name,
            gen_ai.tool.call.id = %planned.call.id,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if crate::telemetry::capture_content() {
            span.record(
                "gen_ai.tool.call.arguments",
                planned.call.input.to_string().as_str(),
            );
        }
        let immediate = |outcome: ToolOutcome| -> Immediate { Some(outcome) };
        let (inner, answered): (Option<ToolStream>, Immediate) = match (&planned.answer, tool) {
            (Some(answer), _) => (None, immediate(ToolOutcome::Finished(answer.clone()))),
            (None, None) => (None, immediate(ToolOutcome::NoResult)),
            (None, Some(tool)) => {
                context.options = planned.options.clone();
                let tool = Arc::clone(tool);
                let input = planned.call.input.clone();
                let execute = || span.in_scope(|| tool.execute(input.value(), context));
                match catch_unwind(AssertUnwindSafe(execute)) {
                    Ok(stream) => (Some(stream), None),
                    Err(panic) => (None, immediate(panicked(&panic))),
                }
            }
        };
        Self {
            inner,
            answered,
            started: false,
            timeout,
            deadline: None,
            cancel,
            span,
        }
    }

    fn finish(&mut self, outcome: ToolOutcome) -> Poll<Option<CallItem>> {
        self.inner = None;
        let error = match &outcome {
            ToolOutcome::Finished(result) => result.is_error.then_some("tool_error"),
            ToolOutcome::TimedOut { .. } => Some("timeout"),
            ToolOutcome::Panicked { .. } => Some("panic"),
            ToolOutcome::NoResult => Some("no_result"),
        };
        if let Some(error) = error {
            self.span.record("error.type", error);
        }
        if let ToolOutcome::Finished(result) = &outcome
            && crate::telemetry::capture_content()
        {
            self.span
                .record("gen_ai.tool.call.result", result.content.as_str());
        }
        Poll::Ready(Some(CallItem::Done(outcome)))
    }
}

/// An outcome known before the call runs.
type Immediate = Option<ToolOutcome>;

impl Stream for CallStream {
    type Item = CallItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CallItem>> {
        let span = self.span.clone();
        let _inside = span.enter();
        if !self.started {
            self.started = true;
            self.deadline = self.timeout.map(|t| Box::pin(tokio::time::sleep(t)));
            return Poll::Ready(Some(CallItem::Started));
        }
        if let Some(outcome) = self.answered.take() {
            return Poll::Ready(Some(CallItem::Done(outcome)));
        }
        if self.inner.is_none() {
            return Poll::Ready(None);
        }
        if let (Some(limit), Some(sleep)) = (self.timeout, self.deadline.as_mut())
            && sleep.as_mut().poll(cx).is_ready()
        {
            self.cancel.cancel();
            let after_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
            return self.finish(ToolOutcome::TimedOut { after_ms });
        }
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match catch_unwind(AssertUnwindSafe(|| inner.poll_next_unpin(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Some(ToolOutput::Event(event)))) => {
                Poll::Ready(Some(CallItem::Event(event)))
            }
            Ok(Poll::Ready(Some(ToolOutput::Done(result)))) => {
                self.finish(ToolOutcome::Finished(result))
            }
            Ok(Poll::Ready(None)) => self.finish(ToolOutcome::NoResult),
            Err(panic) => {
                let outcome = panicked(&panic);
                self.finish(outcome)
            }
        }
    }
}

fn panicked(panic: &Box<dyn std::any::Any + Send>) -> ToolOutcome {
    ToolOutcome::Panicked {
        message: crate::panic_message(panic),
    }
}
