//! The stream a run is consumed through, and the emitter the driver writes
//! events into.
//!
//! The driver is an ordinary `async fn` that awaits [`Emitter::emit`]; the
//! [`RunStream`] owns that future and polls it only when the consumer asks
//! for the next event, so a slow consumer slows the run (bounded buffer)
//! and dropping the stream drops the driver, cancelling the run.

use std::pin::Pin;
use std::task::{Context, Poll};

use agentloop_types::{CancellationToken, EventKind, LoopEvent, LoopResult, RunPath};
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{Future, SinkExt, Stream, StreamExt};

/// Events buffered between the driver and the consumer.
const BUFFER: usize = 64;

/// Writes events with strictly increasing `seq`.
pub(crate) struct Emitter {
    tx: mpsc::Sender<LoopEvent>,
    seq: u64,
}

impl Emitter {
    /// Emits an event of the root run.
    pub(crate) async fn emit(&mut self, kind: EventKind) {
        self.emit_at(RunPath::root(), kind).await;
    }

    /// Emits an event of the run at `path`.
    pub(crate) async fn emit_at(&mut self, path: RunPath, kind: EventKind) {
        let event = LoopEvent {
            seq: self.seq,
            path,
            kind,
        };
        self.seq += 1;
        // A send fails only when the consumer dropped the stream, which also
        // drops this driver: nothing is left to tell.
        let _ = self.tx.send(event).await;
    }
}

/// A running loop: a stream of events ending with the root run's
/// `finished` event. Dropping it cancels the run.
pub struct RunStream {
    rx: mpsc::Receiver<LoopEvent>,
    driver: Option<BoxFuture<'static, ()>>,
    cancel_on_drop: Option<CancellationToken>,
}

impl RunStream {
    /// A stream driven by `drive`, which receives the emitter to write to.
    pub(crate) fn new<F, Fut>(drive: F) -> Self
    where
        F: FnOnce(Emitter) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(BUFFER);
        let emitter = Emitter { tx, seq: 0 };
        Self {
            rx,
            driver: Some(Box::pin(drive(emitter))),
            cancel_on_drop: None,
        }
    }

    /// Cancels `token` when the stream is dropped before the run ended, so
    /// work the run started outside its own future (tools on blocking
    /// threads, child runs) hears of it too.
    pub(crate) fn cancel_on_drop(mut self, token: CancellationToken) -> Self {
        self.cancel_on_drop = Some(token);
        self
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if self.driver.is_some()
            && let Some(token) = &self.cancel_on_drop
        {
            token.cancel();
        }
    }
}

impl Stream for RunStream {
    type Item = LoopEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LoopEvent>> {
        loop {
            if let Poll::Ready(event) = self.rx.poll_next_unpin(cx) {
                return Poll::Ready(event);
            }
            let Some(driver) = self.driver.as_mut() else {
                return Poll::Ready(None);
            };
            match driver.as_mut().poll(cx) {
                // The driver dropped its sender; the loop drains what is
                // buffered and then sees the channel close.
                Poll::Ready(()) => self.driver = None,
                // The driver may have sent before it paused.
                Poll::Pending => return self.rx.poll_next_unpin(cx),
            }
        }
    }
}

/// Drains a run and returns the root run's result.
pub async fn collect(mut stream: RunStream) -> LoopResult {
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let Some(result) = event.root_result() {
            last = Some(result.clone());
        }
    }
    // The driver always ends with a root `finished` event; this fallback
    // only keeps the signature total.
    last.unwrap_or_else(|| LoopResult {
        status: agentloop_types::LoopStatus::Error {
            error: agentloop_types::LoopError::IncompleteStream,
        },
        messages: Vec::new(),
        tokens: Default::default(),
    })
}
