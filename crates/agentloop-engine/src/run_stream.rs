//! The stream a run is consumed through, and the emitter the driver writes
//! events into.
//!
//! The driver is an ordinary `async fn` that awaits [`Emitter::emit`]; the
//! [`RunStream`] owns that future and polls it only when the consumer asks
//! for the next event, so a slow consumer slows the run (bounded buffer)
//! and dropping the stream drops the driver, cancelling the run.
//!
//! Between steps the driver also writes the run's state as a checkpoint;
//! a consumer that stores runs reads them with
//! [`RunStream::with_checkpoints`], others never see them.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use agentloop_types::{CancellationToken, EventKind, LoopEvent, LoopResult, RunPath, RunState};
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{Future, SinkExt, Stream, StreamExt};

/// Events buffered between the driver and the consumer.
const BUFFER: usize = 64;

/// One item of a run read [`with_checkpoints`](RunStream::with_checkpoints).
#[derive(Debug, Clone, PartialEq)]
pub enum RunItem {
    /// An event.
    Event(LoopEvent),
    /// The root run's state after a step, written after the step's events
    /// and before the driver performs the step: storing it lets
    /// [`resume`](crate::resume) continue the run in another process.
    Checkpoint(RunState),
}

/// Writes events with strictly increasing `seq`.
pub(crate) struct Emitter {
    tx: mpsc::Sender<RunItem>,
    seq: u64,
    checkpoints: Arc<AtomicBool>,
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
        let _ = self.tx.send(RunItem::Event(event)).await;
    }

    /// Writes the run's state, when the consumer reads checkpoints. The
    /// state is only read then: reading it brings it up to date, which a
    /// run nobody stores need not pay for every step.
    pub(crate) async fn checkpoint(&mut self, state: impl FnOnce() -> RunState) {
        if self.checkpoints.load(Ordering::Relaxed) {
            let _ = self.tx.send(RunItem::Checkpoint(state())).await;
        }
    }
}

/// A running loop: a stream of events ending with the root run's
/// `finished` event. Dropping it cancels the run.
pub struct RunStream {
    rx: mpsc::Receiver<RunItem>,
    driver: Option<BoxFuture<'static, ()>>,
    cancel_on_drop: Option<CancellationToken>,
    checkpoints: Arc<AtomicBool>,
}

impl RunStream {
    /// A stream driven by `drive`, which receives the emitter to write to.
    pub(crate) fn new<F, Fut>(drive: F) -> Self
    where
        F: FnOnce(Emitter) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(BUFFER);
        let checkpoints = Arc::new(AtomicBool::new(false));
        let emitter = Emitter {
            tx,
            seq: 0,
            checkpoints: Arc::clone(&checkpoints),
        };
        Self {
            rx,
            driver: Some(Box::pin(drive(emitter))),
            cancel_on_drop: None,
            checkpoints,
        }
    }

    /// The run's events and, between steps, its state. Only runs of the
    /// built-in strategies write checkpoints.
    pub fn with_checkpoints(self) -> CheckpointedRun {
        self.checkpoints.store(true, Ordering::Relaxed);
        CheckpointedRun(self)
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<RunItem>> {
        loop {
            if let Poll::Ready(item) = self.rx.poll_next_unpin(cx) {
                return Poll::Ready(item);
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
            match self.poll_item(cx) {
                Poll::Ready(Some(RunItem::Event(event))) => return Poll::Ready(Some(event)),
                Poll::Ready(Some(RunItem::Checkpoint(_))) => continue,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A run read with its checkpoints; see [`RunStream::with_checkpoints`].
/// Dropping it cancels the run.
pub struct CheckpointedRun(RunStream);

impl Stream for CheckpointedRun {
    type Item = RunItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunItem>> {
        self.0.poll_item(cx)
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
