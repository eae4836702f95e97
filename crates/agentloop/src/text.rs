//! Streamed text without destructuring events.

use agentloop_types::{FinishedEvent, StreamingChunkEvent};
use std::pin::Pin;
use std::task::{Context, Poll};

use agentloop_types::{EventKind, LoopError, LoopEvent, LoopResult, LoopStatus, StreamDelta, Wait};
use futures::Stream;

/// The text a root-run event adds to the answer being streamed, if it is a
/// text delta. Deltas of child runs (sub-agents, skills) are `None`: they
/// are not part of the answer.
pub fn text_delta(event: &LoopEvent) -> Option<&str> {
    if let EventKind::StreamingChunk(StreamingChunkEvent {
        delta: StreamDelta::Text { text, .. },
    }) = &event.kind
        && event.path.is_root()
    {
        Some(text)
    } else {
        None
    }
}

/// A run that did not complete: failed, cancelled, suspended or stopped by
/// a limit. Holds the whole result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", describe(&self.result.status))]
pub struct RunEnded {
    /// The run's result: status, messages so far and token totals.
    pub result: Box<LoopResult>,
}

fn describe(status: &LoopStatus) -> String {
    match status {
        LoopStatus::Complete { .. } => "the run completed".to_owned(),
        LoopStatus::Suspended { pending, .. } => {
            let waits: Vec<String> = pending
                .iter()
                .map(|p| match &p.wait {
                    Wait::Approval { reason } => format!("{} ({reason})", p.call.name),
                    Wait::Question { question } => format!("{} asks: {question}", p.call.name),
                })
                .collect();
            format!("the run waits for a person: {}", waits.join("; "))
        }
        LoopStatus::Error { error } => format!("the run failed: {error}"),
        LoopStatus::MaxIterations => "the run reached its max_iterations limit".to_owned(),
        LoopStatus::Cancelled => "the run was cancelled".to_owned(),
        LoopStatus::LimitExceeded { limit, .. } => {
            format!("the run reached a usage limit ({})", limit.name())
        }
    }
}

/// The root run's streamed text, one delta per item, from a stream of
/// events. A run that does not complete ends with one `Err` item saying
/// why, so `print!("{}", delta?)` stops on failure. Once the stream has
/// ended, [`result`](Self::result) holds the run's result.
pub struct TextDeltas<S> {
    events: S,
    result: Option<LoopResult>,
    done: bool,
}

impl<S> TextDeltas<S> {
    /// Text deltas of `events`.
    pub fn new(events: S) -> Self {
        Self {
            events,
            result: None,
            done: false,
        }
    }

    /// The root run's result, once its terminal event has passed.
    pub fn result(&self) -> Option<&LoopResult> {
        self.result.as_ref()
    }

    /// The root run's result, once its terminal event has passed.
    pub fn into_result(self) -> Option<LoopResult> {
        self.result
    }

    /// The item that ends the stream: an error unless the run completed.
    fn ending(&mut self) -> Option<Result<String, RunEnded>> {
        self.done = true;
        let result = self.result.get_or_insert_with(|| LoopResult {
            status: LoopStatus::Error {
                error: LoopError::IncompleteStream,
            },
            messages: Default::default(),
            tokens: Default::default(),
            stop: None,
        });
        match result.status {
            LoopStatus::Complete { .. } => None,
            _ => Some(Err(RunEnded {
                result: Box::new(result.clone()),
            })),
        }
    }
}

impl<S> Stream for TextDeltas<S>
where
    S: Stream<Item = LoopEvent> + Unpin,
{
    type Item = Result<String, RunEnded>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            let Some(event) = futures::ready!(Pin::new(&mut this.events).poll_next(cx)) else {
                return Poll::Ready(this.ending());
            };
            if !event.path.is_root() {
                continue;
            }
            // Taken by value so the text and result move out uncopied.
            if let EventKind::StreamingChunk(StreamingChunkEvent {
                delta: StreamDelta::Text { text, .. },
            }) = event.kind
            {
                return Poll::Ready(Some(Ok(text)));
            } else if let EventKind::Finished(FinishedEvent { result }) = event.kind {
                this.result = Some(*result);
            }
        }
    }
}
